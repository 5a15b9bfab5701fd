package dashboard

import (
	"context"
	"encoding/csv"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// Payments is what the transaction page asks of the payment service: one
// transaction, as the API reads it.
type Payments interface {
	Get(ctx context.Context, merchantID, id string) (*payment.Transaction, error)
}

// TransactionRecords is what the pages read beyond the API: the search by
// reference, the export in batches, and a transaction's timeline. Each is
// scoped to merchantID; another merchant's id is payment.ErrNotFound.
type TransactionRecords interface {
	ByReference(ctx context.Context, merchantID, reference string) (*payment.Transaction, error)
	// TransactionsBefore returns up to limit transactions matching f that
	// are older than the one with id before ("" for the newest), newest
	// first: a page of the list, a batch of the export. TransactionsAfter
	// returns those just newer than after, newest first too.
	TransactionsBefore(ctx context.Context, merchantID string, f payment.ListFilter, before string, limit int) ([]payment.Transaction, error)
	TransactionsAfter(ctx context.Context, merchantID string, f payment.ListFilter, after string, limit int) ([]payment.Transaction, error)
	Timeline(ctx context.Context, merchantID, id string) ([]payment.TransactionEvent, error)
}

// Refunds lists the refunds of the merchant's payments, oldest first: the
// transaction and reconciliation pages show them, so nobody
// pays back by hand what was refunded already.
type Refunds interface {
	List(ctx context.Context, merchantID string, transactionIDs ...string) ([]payment.Refund, error)
}

// transactionsPerPage is the list's page size.
const transactionsPerPage = 50

// transactionFilter is the list's query: the API's filters (dates are
// N'Djamena days, as the page shows times), a reference, and where the
// page starts: the transactions older than Before, or newer than After
// (ids). Pages are read by position, not counted: each is one index range
// scan however many transactions the merchant has.
type transactionFilter struct {
	Status    string
	Operator  string
	From      string // 2006-01-02
	To        string
	Reference string
	Before    string
	After     string
}

// query is the filter as URL parameters with a cursor ("before" or
// "after", and an id), for the pager's links and the export.
func (f transactionFilter) query(cursor, id string) string {
	v := url.Values{}
	for k, s := range map[string]string{"status": f.Status, "operator": f.Operator, "from": f.From, "to": f.To, "q": f.Reference, cursor: id} {
		if s != "" && k != "" {
			v.Set(k, s)
		}
	}
	return v.Encode()
}

// readTransactionFilter reads the list's query; each bad value is named in
// fields with a catalogue key.
func readTransactionFilter(r *http.Request) (transactionFilter, payment.ListFilter, map[string]string) {
	q := r.URL.Query()
	f := transactionFilter{Status: q.Get("status"), Operator: q.Get("operator"), From: q.Get("from"), To: q.Get("to"),
		Reference: strings.TrimSpace(q.Get("q")), Before: q.Get("before"), After: q.Get("after")}
	lf := payment.ListFilter{Status: payment.Status(f.Status), Operator: payment.Operator(f.Operator)}
	fields := map[string]string{}
	if f.Status != "" && !lf.Status.Valid() {
		fields["status"] = "tx.filter.bad.status"
	}
	if f.Operator != "" && !lf.Operator.Valid() {
		fields["operator"] = "tx.filter.bad.operator"
	}
	if f.From != "" {
		day, err := time.ParseInLocation(time.DateOnly, f.From, ndjamena)
		if err != nil {
			fields["from"] = "tx.filter.bad.date"
		}
		lf.From = day
	}
	if f.To != "" {
		day, err := time.ParseInLocation(time.DateOnly, f.To, ndjamena)
		if err != nil {
			fields["to"] = "tx.filter.bad.date"
		}
		lf.To = day.AddDate(0, 0, 1).Add(-time.Microsecond) // the whole day
	}
	// Days the wrong way round select nothing: say so, not "no match".
	if f.From != "" && f.To != "" && fields["from"] == "" && fields["to"] == "" && lf.To.Before(lf.From) {
		fields["to"] = "tx.filter.bad.range"
	}
	if f.Reference != "" && !payment.ValidReference(f.Reference) {
		fields["q"] = "tx.filter.bad.reference"
	}
	for _, id := range []string{f.Before, f.After} {
		if id != "" && !payment.ValidID(id) {
			fields["page"] = "tx.filter.bad.page"
		}
	}
	return f, lf, fields
}

type transactionsPage struct {
	layout
	Filter       transactionFilter
	Fields       map[string]string
	Statuses     []payment.Status
	Operators    []payment.Operator
	Transactions []payment.Transaction
	// Links to the newest page, the neighbouring pages ("" when there is
	// none) and the export of the filtered list: whole paths with their
	// query.
	FirstURL  string
	PrevURL   string
	NextURL   string
	ExportURL string
}

func (d *Dashboard) handleTransactions() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		merchant := sessionOf(r).MerchantID
		f, lf, fields := readTransactionFilter(r)
		p := &transactionsPage{layout: layout{Title: "tx.title", Nav: "transactions"}, Filter: f, Fields: fields,
			Statuses:  []payment.Status{payment.StatusPending, payment.StatusSuccess, payment.StatusFailed, payment.StatusTimeout, payment.StatusExpired},
			Operators: payment.Operators, Transactions: []payment.Transaction{}}
		if len(fields) > 0 {
			d.render(w, r, http.StatusBadRequest, "transactions", p)
			return
		}
		newer, older := false, false
		switch {
		case f.Reference != "":
			// References are unique per merchant: the search finds one
			// transaction or none.
			t, err := d.records.ByReference(r.Context(), merchant, f.Reference)
			if err != nil && !isNotFound(err) {
				d.fail(w, r, err)
				return
			}
			if t != nil && matches(t, lf) {
				p.Transactions = []payment.Transaction{*t}
			}
		case f.After != "":
			rows, err := d.records.TransactionsAfter(r.Context(), merchant, lf, f.After, transactionsPerPage+1)
			if err != nil {
				d.fail(w, r, err)
				return
			}
			if newer = len(rows) > transactionsPerPage; newer {
				rows = rows[1:]
			}
			p.Transactions, older = rows, len(rows) > 0
		default:
			rows, err := d.records.TransactionsBefore(r.Context(), merchant, lf, f.Before, transactionsPerPage+1)
			if err != nil {
				d.fail(w, r, err)
				return
			}
			if older = len(rows) > transactionsPerPage; older {
				rows = rows[:transactionsPerPage]
			}
			p.Transactions, newer = rows, f.Before != "" && len(rows) > 0
		}
		if n := len(p.Transactions); n > 0 {
			if newer {
				p.PrevURL = withQuery("/transactions", f.query("after", p.Transactions[0].ID))
				p.FirstURL = withQuery("/transactions", f.query("", ""))
			}
			if older {
				p.NextURL = withQuery("/transactions", f.query("before", p.Transactions[n-1].ID))
			}
		} else if f.Before != "" || f.After != "" {
			p.FirstURL = withQuery("/transactions", f.query("", ""))
		}
		p.ExportURL = withQuery("/transactions/export.csv", f.query("", ""))
		d.render(w, r, http.StatusOK, "transactions", p)
	})
}

// withQuery joins a path and an encoded query.
func withQuery(path, query string) string {
	if query == "" {
		return path
	}
	return path + "?" + query
}

// matches applies the list's other filters to a transaction found by
// reference.
func matches(t *payment.Transaction, f payment.ListFilter) bool {
	return (f.Status == "" || t.Status == f.Status) && (f.Operator == "" || t.Operator == f.Operator) &&
		(f.From.IsZero() || !t.CreatedAt.Before(f.From)) && (f.To.IsZero() || !t.CreatedAt.After(f.To))
}

// csvHeader is the export's first line: every field of the contract's
// transaction, in its order.
var csvHeader = []string{"id", "reference", "internal_ref", "amount", "currency", "operator", "phone_number",
	"description", "status", "created_at", "updated_at", "expires_at"}

// handleExport streams the filtered list as CSV, batch by batch: memory
// stays flat and no database connection is held while the browser reads,
// whatever the number of rows. Times are the API's UTC wire format.
func (d *Dashboard) handleExport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		merchant := sessionOf(r).MerchantID
		f, lf, fields := readTransactionFilter(r)
		if len(fields) > 0 {
			// The list's page names each bad filter, in the user's
			// language; a download cannot.
			http.Redirect(w, r, withQuery("/transactions", r.URL.RawQuery), http.StatusSeeOther)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="transactions-`+d.now().In(ndjamena).Format("20060102-1504")+`.csv"`)
		h.Set("Cache-Control", "no-store")
		out := csv.NewWriter(w)
		out.Write(csvHeader)
		write := func(t *payment.Transaction) {
			desc := ""
			if t.Description != nil {
				desc = *t.Description
			}
			out.Write([]string{t.ID, cell(t.Reference), t.InternalRef, strconv.FormatInt(t.Amount, 10), t.Currency,
				string(t.Operator), t.PhoneNumber, cell(desc), string(t.Status),
				payment.FormatTime(t.CreatedAt), payment.FormatTime(t.UpdatedAt), payment.FormatTime(t.ExpiresAt)})
		}
		if f.Reference != "" {
			t, err := d.records.ByReference(r.Context(), merchant, f.Reference)
			switch {
			case err == nil && matches(t, lf):
				write(t)
			case err != nil && !isNotFound(err):
				d.log.Error("export", "request_id", w.Header().Get("X-Request-Id"), "err", err)
				out.Write([]string{"# export interrupted: internal error, request id " + w.Header().Get("X-Request-Id")})
			}
			out.Flush()
			return
		}
		// The server's write timeout bounds a whole response; an export
		// of any size gets it afresh for each batch instead.
		rc := http.NewResponseController(w)
		before := ""
		for {
			rc.SetWriteDeadline(time.Now().Add(exportBatchTimeout))
			batch, err := d.records.TransactionsBefore(r.Context(), merchant, lf, before, exportBatch)
			if err != nil {
				// The status line is gone; the truncated file must not
				// pass for a whole one.
				d.log.Error("export", "request_id", w.Header().Get("X-Request-Id"), "err", err)
				out.Write([]string{"# export interrupted: internal error, request id " + w.Header().Get("X-Request-Id")})
				out.Flush()
				return
			}
			for i := range batch {
				write(&batch[i])
			}
			out.Flush()
			if out.Error() != nil {
				return // the browser went away
			}
			rc.Flush()
			if len(batch) < exportBatch {
				return
			}
			before = batch[len(batch)-1].ID
		}
	})
}

// exportBatch is how many rows the export reads per query, and
// exportBatchTimeout how long the browser has to take one batch.
const (
	exportBatch        = 500
	exportBatchTimeout = 30 * time.Second
)

// cell keeps free text from being read as a formula by a spreadsheet
// ("=", "+", "-", "@" first): the export is opened in Excel more often
// than parsed.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

type transactionPage struct {
	layout
	Tx           payment.Transaction
	Timeline     []payment.TransactionEvent
	DeliveryList deliveryList
	Refunds      []payment.Refund
	// Refresh asks app.js to read a PENDING transaction's page again
	// every Refresh seconds, and to reload it once the page read no
	// longer asks (the payment ended).
	Refresh int
	now     time.Time
}

// RefundState is the catalogue key of a refund's state: one cut short
// (payment.Refund.CutShort) no longer says "no answer yet".
func (p *transactionPage) RefundState(r payment.Refund) string {
	if r.CutShort(p.now) {
		return "refund.REQUESTED.cut"
	}
	return "refund." + string(r.Status)
}

func (d *Dashboard) handleTransaction() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		merchant, id := sessionOf(r).MerchantID, r.PathValue("id")
		t, err := d.payments.Get(r.Context(), merchant, id)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		steps, err := d.records.Timeline(r.Context(), merchant, id)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		if len(steps) == 0 {
			// Recorded before transactions kept a timeline: what the row
			// itself says.
			steps = []payment.TransactionEvent{{Kind: payment.EventCreated, At: t.CreatedAt, Status: payment.StatusPending}}
			if t.Status.Final() {
				steps = append(steps, payment.TransactionEvent{Kind: payment.EventSettled, At: t.UpdatedAt, Status: t.Status})
			}
		}
		hist, err := d.webhooks.History(r.Context(), merchant, webhook.DeliveryFilter{TransactionID: id, Limit: webhook.MaxDeliveryLimit})
		if err != nil {
			d.fail(w, r, err)
			return
		}
		refunds, err := d.refunds.List(r.Context(), merchant, id)
		if err != nil {
			d.fail(w, r, err)
			return
		}
		p := &transactionPage{layout: layout{Title: "tx.detail.title", TitleDetail: t.Reference, Nav: "transactions"}, Tx: *t, Timeline: steps, Refunds: refunds, now: d.now()}
		p.DeliveryList = deliveryList{layout: &p.layout, Deliveries: hist.Deliveries, Actions: true, Return: "/transactions/" + t.ID}
		if t.Status == payment.StatusPending {
			p.Refresh = 5
		}
		d.render(w, r, http.StatusOK, "transaction", p)
	})
}

// WhenSeconds is when to the second: a payment's steps are seconds apart.
func (l *layout) WhenSeconds(t time.Time) template.HTML {
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339Nano) + `" title="` + t.UTC().Format("2006-01-02 15:04:05.000") +
		` UTC">` + t.In(ndjamena).Format("02/01/2006 15:04:05") + `</time>`)
}

// StepName is a timeline step's name in the page's language.
func (l *layout) StepName(e payment.TransactionEvent) string {
	if e.Kind == payment.EventHeard {
		return l.T("tx.step.heard." + e.Source)
	}
	return l.T("tx.step." + string(e.Kind))
}

func init() {
	addMessages(map[string]string{
		"tx.title":                       "Transactions",
		"tx.filter":                      "Filter",
		"tx.filter.any":                  "Any",
		"tx.filter.from":                 "From (day)",
		"tx.filter.to":                   "To (day)",
		"tx.filter.reference":            "Reference",
		"tx.filter.apply":                "Apply",
		"tx.filter.clear":                "Clear",
		"tx.filter.bad.status":           "Choose a status from the list.",
		"tx.filter.bad.operator":         "Choose AIRTEL or MOOV.",
		"tx.filter.bad.date":             "Enter a day as YYYY-MM-DD.",
		"tx.filter.bad.range":            "The last day is before the first: choose a day on or after it.",
		"tx.filter.bad.reference":        "A reference has at most 64 characters: letters, digits and . _ : / -",
		"tx.filter.bad.page":             "This page link is not valid: start again from the newest.",
		"tx.export":                      "Export CSV",
		"tx.shown":                       "%d transactions on this page, newest first.",
		"tx.shown.one":                   "1 transaction on this page.",
		"tx.first":                       "Newest",
		"tx.prev":                        "Newer",
		"tx.next":                        "Older",
		"tx.phone":                       "Payer",
		"tx.none":                        "No transaction matches these filters.",
		"tx.detail.title":                "Transaction",
		"tx.field.id":                    "Id",
		"tx.field.internal_ref":          "Internal reference",
		"tx.field.currency":              "Currency",
		"tx.field.description":           "Description",
		"tx.field.created_at":            "Created",
		"tx.field.updated_at":            "Updated",
		"tx.field.expires_at":            "Expires",
		"tx.field.failure_reason":        "Failure reason",
		"tx.field.operator_code":         "Operator's code",
		"tx.field.operator_ref":          "Operator's reference",
		"reason.wrong_pin":               "Wrong PIN",
		"reason.insufficient_balance":    "Insufficient balance",
		"reason.limit_exceeded":          "Payer's limit exceeded",
		"reason.invalid_amount":          "Amount refused by the operator",
		"reason.payer_did_not_enter_pin": "The payer did not enter the PIN",
		"reason.refused":                 "Refused by the payer",
		"reason.not_permitted":           "Not permitted for this payer",
		"reason.timed_out":               "The payer did not answer in time",
		"reason.payer_not_registered":    "Number not registered for Mobile Money",
		"reason.other":                   "Other (see the operator's code)",
		"tx.refunds":                     "Refunds",
		"tx.refund.by":                   "asked by %s",
		"refund.REQUESTED":               "Asked, no answer yet",
		"refund.REQUESTED.cut":           "Asked, and no answer was recorded: the request was cut short. Check the operator's portal before asking again",
		"refund.REFUNDED":                "Refunded",
		"refund.REFUSED":                 "Refused by the operator",
		"refund.UNKNOWN":                 "Answer unknown",
		"refund.NOT_SENT":                "Not sent: the operator could not be reached (no money moved)",
		"tx.timeline":                    "Timeline",
		"tx.step.created":                "Created",
		"tx.step.push_accepted":          "Payment request accepted by the operator",
		"tx.step.push_unconfirmed":       "Payment request sent, answer unclear",
		"tx.step.settled":                "Final status",
		"tx.step.late_outcome":           "Late answer recorded for reconciliation",
		"tx.step.heard.callback":         "Operator callback",
		"tx.step.heard.poll":             "Status poll answer",
		"tx.step.heard.expiry":           "Expiry check",
		"tx.step.heard.sandbox":          "Sandbox payer's answer",
		"tx.step.heard.push":             "Answer to the payment request",
		"tx.step.heard.late_check":       "Check after TIMEOUT",
		"tx.deliveries":                  "Webhook deliveries",
		"tx.deliveries.none":             "No webhook was sent for this transaction.",
		"tx.refreshing":                  "This page updates itself when the payment moves on.",
		"tx.refresh":                     "Refresh",
	}, map[string]string{
		"tx.title":                       "Transactions",
		"tx.filter":                      "Filtrer",
		"tx.filter.any":                  "Tous",
		"tx.filter.from":                 "Du",
		"tx.filter.to":                   "Au",
		"tx.filter.reference":            "Référence",
		"tx.filter.apply":                "Appliquer",
		"tx.filter.clear":                "Effacer",
		"tx.filter.bad.status":           "Choisissez un statut dans la liste.",
		"tx.filter.bad.operator":         "Choisissez AIRTEL ou MOOV.",
		"tx.filter.bad.date":             "Saisissez un jour au format AAAA-MM-JJ.",
		"tx.filter.bad.range":            "Le dernier jour précède le premier : choisissez un jour égal ou postérieur.",
		"tx.filter.bad.reference":        "Une référence compte au plus 64 caractères : lettres, chiffres et . _ : / -",
		"tx.filter.bad.page":             "Ce lien de page n'est pas valide : revenez à la première page.",
		"tx.export":                      "Exporter en CSV",
		"tx.shown":                       "%d transactions sur cette page, les plus récentes d'abord.",
		"tx.shown.one":                   "1 transaction sur cette page.",
		"tx.first":                       "Les plus récentes",
		"tx.prev":                        "Plus récentes",
		"tx.next":                        "Plus anciennes",
		"tx.phone":                       "Payeur",
		"tx.none":                        "Aucune transaction ne correspond à ces filtres.",
		"tx.detail.title":                "Transaction",
		"tx.field.id":                    "Identifiant",
		"tx.field.internal_ref":          "Référence interne",
		"tx.field.currency":              "Devise",
		"tx.field.description":           "Description",
		"tx.field.created_at":            "Créée le",
		"tx.field.updated_at":            "Mise à jour le",
		"tx.field.expires_at":            "Expire le",
		"tx.field.failure_reason":        "Motif de l'échec",
		"tx.field.operator_code":         "Code de l'opérateur",
		"tx.field.operator_ref":          "Référence de l'opérateur",
		"reason.wrong_pin":               "Code PIN erroné",
		"reason.insufficient_balance":    "Solde insuffisant",
		"reason.limit_exceeded":          "Plafond du payeur dépassé",
		"reason.invalid_amount":          "Montant refusé par l'opérateur",
		"reason.payer_did_not_enter_pin": "Le payeur n'a pas saisi son code PIN",
		"reason.refused":                 "Refusé par le payeur",
		"reason.not_permitted":           "Non autorisé pour ce payeur",
		"reason.timed_out":               "Le payeur n'a pas répondu à temps",
		"reason.payer_not_registered":    "Numéro non inscrit au Mobile Money",
		"reason.other":                   "Autre (voir le code de l'opérateur)",
		"tx.refunds":                     "Remboursements",
		"tx.refund.by":                   "demandé par %s",
		"refund.REQUESTED":               "Demandé, en attente de réponse",
		"refund.REQUESTED.cut":           "Demandé, et aucune réponse n'a été enregistrée : la demande a été interrompue. Vérifiez sur le portail de l'opérateur avant de redemander",
		"refund.REFUNDED":                "Remboursé",
		"refund.REFUSED":                 "Refusé par l'opérateur",
		"refund.UNKNOWN":                 "Réponse inconnue",
		"refund.NOT_SENT":                "Non envoyé : l'opérateur n'a pas pu être joint (aucun argent n'a bougé)",
		"tx.timeline":                    "Chronologie",
		"tx.step.created":                "Créée",
		"tx.step.push_accepted":          "Demande de paiement acceptée par l'opérateur",
		"tx.step.push_unconfirmed":       "Demande de paiement envoyée, réponse incertaine",
		"tx.step.settled":                "Statut final",
		"tx.step.late_outcome":           "Réponse tardive enregistrée pour rapprochement",
		"tx.step.heard.callback":         "Notification de l'opérateur",
		"tx.step.heard.poll":             "Réponse à l'interrogation du statut",
		"tx.step.heard.expiry":           "Vérification à l'expiration",
		"tx.step.heard.sandbox":          "Réponse du payeur (bac à sable)",
		"tx.step.heard.push":             "Réponse à la demande de paiement",
		"tx.step.heard.late_check":       "Vérification après dépassement du délai",
		"tx.deliveries":                  "Envois de webhooks",
		"tx.deliveries.none":             "Aucun webhook n'a été envoyé pour cette transaction.",
		"tx.refreshing":                  "Cette page se met à jour quand le paiement avance.",
		"tx.refresh":                     "Actualiser",
	})
}
