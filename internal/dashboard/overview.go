package dashboard

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// DailyTotal is the number and amount of one merchant's transactions
// created on one N'Djamena day with one status and operator.
type DailyTotal struct {
	Day      string // 2006-01-02, N'Djamena time
	Status   payment.Status
	Operator payment.Operator
	Count    int64
	Amount   int64
}

// Figures is what the overview reads: kept totals, never a scan of every
// transaction.
type Figures interface {
	// DailyTotals returns the merchant's totals for the days from first
	// to last inclusive (2006-01-02).
	DailyTotals(ctx context.Context, merchantID, first, last string) ([]DailyTotal, error)
	// RefundedByDay returns the amounts refunded of the merchant's SUCCESS
	// payments created on the days first to last, by day.
	RefundedByDay(ctx context.Context, merchantID, first, last string) (map[string]int64, error)
	// LatestTransactions returns the merchant's n newest transactions.
	LatestTransactions(ctx context.Context, merchantID string, n int) ([]payment.Transaction, error)
	// Alerts counts what needs a person: undelivered webhook deliveries
	// and open reconciliation cases.
	Alerts(ctx context.Context, merchantID string) (undelivered, openCases int64, err error)
}

// overviewPage shows today's and the week's figures.
type overviewPage struct {
	layout
	Today      int64 // XAF collected today: SUCCESS, less what was refunded of it
	TodayCount int64
	Week       int64
	WeekCount  int64
	// TodayRefunded and WeekRefunded are what was refunded of the
	// collected payments: shown beside the net figures above.
	TodayRefunded int64
	WeekRefunded  int64
	SuccessRate   string // "87 %", or "–" with no final payment
	ByStatus      []countRow
	ByOperator    []countRow
	Chart         template.HTML
	Latest        []payment.Transaction
	Undelivered   int64
	OpenCases     int64
}

type countRow struct {
	Name   string // status or operator code
	Today  int64  // count today
	Count  int64  // count over the 7 days
	Amount int64  // amount over the 7 days
}

func (d *Dashboard) handleOverview() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionOf(r)
		p, err := d.overview(r.Context(), s.MerchantID, d.now(), language(r, s.User.Language))
		if err != nil {
			d.fail(w, r, err)
			return
		}
		d.render(w, r, http.StatusOK, "overview", p)
	})
}

func (d *Dashboard) overview(ctx context.Context, merchantID string, now time.Time, lang string) (*overviewPage, error) {
	days := make([]string, 7)
	for i := range days {
		days[i] = dayOf(now.AddDate(0, 0, i-6))
	}
	totals, err := d.figures.DailyTotals(ctx, merchantID, days[0], days[6])
	if err != nil {
		return nil, err
	}
	refunded, err := d.figures.RefundedByDay(ctx, merchantID, days[0], days[6])
	if err != nil {
		return nil, err
	}
	latest, err := d.figures.LatestTransactions(ctx, merchantID, 10)
	if err != nil {
		return nil, err
	}
	undelivered, cases, err := d.figures.Alerts(ctx, merchantID)
	if err != nil {
		return nil, err
	}
	p := &overviewPage{layout: layout{Title: "overview.title", Nav: "overview"}, Latest: latest, Undelivered: undelivered, OpenCases: cases}
	perDay := map[string]int64{}
	status := map[payment.Status]*countRow{}
	operator := map[payment.Operator]*countRow{}
	for _, s := range []payment.Status{payment.StatusSuccess, payment.StatusPending, payment.StatusFailed, payment.StatusTimeout, payment.StatusExpired} {
		status[s] = &countRow{Name: string(s)}
		p.ByStatus = append(p.ByStatus, countRow{Name: string(s)})
	}
	for _, o := range payment.Operators {
		operator[o] = &countRow{Name: string(o)}
	}
	var final int64
	for _, t := range totals {
		for _, row := range []*countRow{status[t.Status], operator[t.Operator]} {
			if row == nil {
				continue
			}
			row.Count += t.Count
			row.Amount += t.Amount
			if t.Day == days[6] {
				row.Today += t.Count
			}
		}
		if t.Status.Final() {
			final += t.Count
		}
		if t.Status != payment.StatusSuccess {
			continue
		}
		perDay[t.Day] += t.Amount
		p.Week += t.Amount
		p.WeekCount += t.Count
		if t.Day == days[6] {
			p.Today += t.Amount
			p.TodayCount += t.Count
		}
	}
	// Collected is net of refunds; the tables keep each status's amount.
	for day, amount := range refunded {
		perDay[day] -= amount
		p.Week -= amount
		p.WeekRefunded += amount
		if day == days[6] {
			p.Today -= amount
			p.TodayRefunded += amount
		}
	}
	for i := range p.ByStatus {
		p.ByStatus[i] = *status[payment.Status(p.ByStatus[i].Name)]
	}
	for _, o := range payment.Operators {
		p.ByOperator = append(p.ByOperator, *operator[o])
	}
	p.SuccessRate = "–"
	if final > 0 {
		p.SuccessRate = fmt.Sprintf("%d %%", (status[payment.StatusSuccess].Count*200+final)/(2*final)) // rounded, not cut
	}
	p.Chart = barChart(lang, days, perDay)
	return p, nil
}

// barChart draws the week's collected amounts as an inline SVG, named in
// lang: one bar a day, the day's number under it, the day and its amount
// in each bar's title. It has no inline style (the CSP forbids it): the
// stylesheet colours it.
func barChart(lang string, days []string, amounts map[string]int64) template.HTML {
	const width, height, bottom = 700, 180, 20
	var top int64 = 1
	for _, d := range days {
		top = max(top, amounts[d])
	}
	slot := width / len(days)
	var b strings.Builder
	// The name carries the figures: a bar's <title> shows on hover only,
	// which neither a screen reader, a keyboard nor a finger gets.
	figures := make([]string, len(days))
	for i, d := range days {
		figures[i] = d[8:] + "/" + d[5:7] + " " + fcfa(amounts[d])
	}
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s">`, width, height,
		template.HTMLEscapeString(translate(lang, "common.labelled", translate(lang, "overview.chart"), strings.Join(figures, ", "))))
	for i, d := range days {
		h := int(amounts[d] * (height - bottom - 10) / top)
		if amounts[d] > 0 {
			h = max(h, 2)
		}
		x := i*slot + slot/5
		fmt.Fprintf(&b, `<g><title>%s</title><rect class="bar" x="%d" y="%d" width="%d" height="%d" rx="3"></rect>`,
			template.HTMLEscapeString(figures[i]), x, height-bottom-h, slot*3/5, h)
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">%s</text></g>`, i*slot+slot/2, height-4, d[8:]+"/"+d[5:7])
	}
	b.WriteString(`<line class="base" x1="0" x2="700" y1="160" y2="160"></line></svg>`)
	return template.HTML(b.String())
}
