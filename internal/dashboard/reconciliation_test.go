package dashboard_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testserver"
)

// lateCase makes a reconciliation case for merchant: a payment refused on
// the phone, then confirmed by a late operator answer. It returns the
// transaction's id.
func lateCase(t *testing.T, b *bundle, merchantID, apiKey, reference string) string {
	t.Helper()
	id := createPayment(t, b, apiKey, reference, "MOOV", 3000)["id"].(string)
	ctx := context.Background()
	for _, to := range []payment.Status{payment.StatusFailed, payment.StatusSuccess} {
		if _, _, err := b.s.App.Payments.Settle(ctx, merchantID, id, to, payment.SourceCallback, "TS: paid after all"); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

var caseID = regexp.MustCompile(`/reconciliation/([0-9a-f-]{36})/resolve`)

// TestReconciliationPage: a late contradicting answer is listed with what
// happened; resolving it needs a note and records who, once; viewers read
// but cannot resolve; another merchant's case is not found.
func TestReconciliationPage(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		tx := lateCase(t, b, b.s.MerchantID, b.s.APIKey, "late-1")
		otherID, otherKey := b.s.NewMerchant(t)
		lateCase(t, b, otherID, otherKey, "their-late")
		b.addUser(b.s.MerchantID, "viewer@example.com", "viewer")

		viewer := b.login("viewer@example.com")
		page := viewer.get("/reconciliation")
		if page.status != http.StatusOK || !strings.Contains(page.body, "The payment&#39;s status was “Failed” when the operator reported “Succeeded”.") ||
			!strings.Contains(page.body, "/transactions/"+tx) || !strings.Contains(page.body, "TS: paid after all") || strings.Contains(page.body, "their-late") {
			t.Fatalf("cases page: %d", page.status)
		}
		if caseID.MatchString(page.body) {
			t.Error("a viewer is offered the resolve form")
		}
		owner := b.login(b.owner.Email)
		m := caseID.FindStringSubmatch(owner.get("/reconciliation").body)
		if m == nil {
			t.Fatal("no resolve form for the owner")
		}
		id := m[1]
		if r := viewer.postForm("/reconciliation/"+id+"/resolve", url.Values{"note": {"mine"}}); r.status != http.StatusForbidden {
			t.Errorf("viewer resolving: %d", r.status)
		}
		if r := owner.postForm("/reconciliation/"+id+"/resolve", url.Values{"note": {"  "}}); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="note-`+id+`-error">Say what was done about this case.</p>`) {
			t.Errorf("empty note: %d", r.status)
		}
		owner.headers["Accept-Language"] = "fr"
		long := strings.Repeat("é", payment.MaxResolutionNote+1)
		if r := owner.postForm("/reconciliation/"+id+"/resolve", url.Values{"note": {long}}); r.status != http.StatusUnprocessableEntity ||
			!strings.Contains(r.body, `aria-invalid="true"`) || !strings.Contains(r.body, "La note doit compter au plus 1000 caractères.") || strings.Contains(r.body, "at most") {
			t.Errorf("a long note on a French page: %d, not refused in French under its field", r.status)
		}
		delete(owner.headers, "Accept-Language")
		// A note of several lines, as a browser sends a textarea's (CRLF).
		if r := owner.postForm("/reconciliation/"+id+"/resolve", url.Values{"note": {"Refunded 3 000 FCFA to the payer,\r\n\tref R-7"}}); r.status != http.StatusSeeOther {
			t.Fatalf("resolve: %d %s", r.status, r.body)
		}
		done := viewer.get("/reconciliation")
		if !strings.Contains(done.body, "Resolved by "+b.owner.Email) || !strings.Contains(done.body, "Refunded 3 000 FCFA to the payer,\r\n\tref R-7") {
			t.Error("the resolution is not shown")
		}
		if open := viewer.get("/reconciliation?open=1"); strings.Contains(open.body, "/transactions/"+tx) {
			t.Error("a resolved case is listed as open")
		}
		if r := owner.postForm("/reconciliation/"+id+"/resolve", url.Values{"note": {"again"}}); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "This case was resolved already: its note is below.") {
			t.Errorf("resolving twice: %d", r.status)
		}
		if !strings.Contains(owner.get("/audit").body, "reconciliation.case_resolved") {
			t.Error("the audit log lacks the resolution")
		}
		// The other merchant's case, from this session: not found.
		theirs, _ := b.s.App.Cases.ForMerchant(context.Background(), otherID, false)
		if r := owner.postForm("/reconciliation/"+theirs[0].ID+"/resolve", url.Values{"note": {"not mine"}}); r.status != http.StatusNotFound {
			t.Errorf("resolving another merchant's case: %d", r.status)
		}
	})
}

// TestReconciliationPages: a merchant's cases come 50 to a page, newest
// first, with a link to the older ones and back to the newest, with the
// open filter kept; a note refused on a later page is shown there again,
// and resolving a case leads back to its page. Before, the page showed the
// newest 200 and nothing said more existed.
func TestReconciliationPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		const n = 53
		for i := range n {
			lateCase(t, b, b.s.MerchantID, b.s.APIKey, fmt.Sprintf("late-%02d", i))
		}
		owner := b.login(b.owner.Email)
		next := regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
		// walk returns the case ids of each page from first, in order.
		walk := func(first string) (pages [][]string, last answer) {
			t.Helper()
			for path := first; path != ""; {
				last = owner.get(path)
				if last.status != http.StatusOK {
					t.Fatalf("%s: %d", path, last.status)
				}
				var ids []string
				for _, m := range caseID.FindAllStringSubmatch(last.body, -1) {
					ids = append(ids, m[1])
				}
				pages = append(pages, ids)
				path = ""
				if m := next.FindStringSubmatch(last.body); m != nil {
					path = html.UnescapeString(m[1])
				}
				if len(pages) > 3 {
					t.Fatal("the older links do not end")
				}
			}
			return pages, last
		}
		pages, last := walk("/reconciliation")
		if len(pages) != 2 || len(pages[0]) != 50 || len(pages[1]) != n-50 {
			t.Fatalf("pages of %v cases, want 50 and %d", lens(pages), n-50)
		}
		if !strings.Contains(last.body, `<a href="/reconciliation">← Newest</a>`) {
			t.Error("a later page has no way back to the newest")
		}
		seen := map[string]bool{}
		for _, id := range slices.Concat(pages...) {
			seen[id] = true
		}
		if len(seen) != n {
			t.Errorf("%d distinct cases over the pages, want %d", len(seen), n)
		}
		stored, err := b.s.App.Cases.ForMerchant(context.Background(), b.s.MerchantID, false)
		if err != nil || len(stored) != n || stored[0].ID != pages[0][0] || stored[n-1].ID != pages[1][n-51] {
			t.Fatalf("the pages are not newest first: %v", err)
		}

		// On the second page: a refused note is shown there again; a
		// resolved case leads back there.
		id := pages[1][0]
		action := regexp.MustCompile(`action="(/reconciliation/` + id + `/resolve[^"]*)"`).FindStringSubmatch(last.body)
		if action == nil || !strings.Contains(action[1], "before=") {
			t.Fatalf("the resolve form of a case on the second page: %v", action)
		}
		path := html.UnescapeString(action[1])
		if r := owner.postForm(path, url.Values{"note": {" "}}); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="note-`+id+`-error"`) {
			t.Errorf("a refused note on the second page: %d, not shown under its case", r.status)
		}
		r := owner.postForm(path, url.Values{"note": {"refunded by hand"}})
		if loc := r.header.Get("Location"); r.status != http.StatusSeeOther || loc != "/reconciliation?before="+pages[0][49] {
			t.Errorf("resolved on the second page: %d to %q", r.status, loc)
		}

		// Open cases only: the filter stays on every page.
		open, last := walk("/reconciliation?open=1")
		if len(open) != 2 || len(open[0])+len(open[1]) != n-1 || slices.Contains(slices.Concat(open...), id) {
			t.Errorf("open cases over pages of %v, want %d without the resolved one", lens(open), n-1)
		}
		if !strings.Contains(last.body, `<a href="/reconciliation?open=1">← Newest</a>`) {
			t.Error("the open filter's later page does not lead back to its own newest")
		}
		// Every case of the open filter's second page resolved there: the
		// page it leads back to says so and links to the newest.
		var back string
		for _, id := range open[1] {
			r := owner.postForm("/reconciliation/"+id+"/resolve?"+url.Values{"open": {"1"}, "before": {open[0][49]}}.Encode(), url.Values{"note": {"done"}})
			back = r.header.Get("Location")
		}
		if r := owner.get(back); r.status != http.StatusOK || caseID.MatchString(r.body) ||
			!strings.Contains(r.body, "No case on this page (those it showed may have been resolved)") || !strings.Contains(r.body, `<a href="/reconciliation?open=1">← Newest</a>`) {
			t.Errorf("%s once its cases are resolved: %d, not an empty page leading to the newest", back, r.status)
		}
		// A before that is no case of this merchant: the same.
		if r := owner.get("/reconciliation?before=01a201a5-ff55-7e2e-9bdb-ebdaee74e215"); r.status != http.StatusOK || caseID.MatchString(r.body) || !strings.Contains(r.body, "← Newest") {
			t.Errorf("an unknown before: %d", r.status)
		}
	})
}

func lens(pages [][]string) []int {
	var n []int
	for _, p := range pages {
		n = append(n, len(p))
	}
	return n
}

// TestRefundStatesShown: the payment page tells a refund that never
// reached the operator (nothing moved, ask again) from one whose request
// was cut short (still REQUESTED well after the operator's 20 s: only the
// operator's portal can say), and from one just asked.
func TestRefundStatesShown(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		app := b.s.App
		refund := func(ref string, asked time.Time, final payment.RefundStatus) string {
			t.Helper()
			id := createPayment(t, b, b.s.APIKey, ref, "AIRTEL", 2500)["id"].(string)
			if _, _, err := app.Payments.Settle(ctx, b.s.MerchantID, id, payment.StatusSuccess, payment.SourceCallback, "TS"); err != nil {
				t.Fatal(err)
			}
			r := &payment.Refund{ID: uuid.NewString(), MerchantID: b.s.MerchantID, TransactionID: id, Amount: 2500, RequestedBy: "ops",
				Status: payment.RefundRequested, RequestedAt: asked}
			if err := app.Refunds.StartRefund(ctx, r); err != nil {
				t.Fatal(err)
			}
			if final != payment.RefundRequested {
				r.Status, r.OperatorDetail, r.AnsweredAt = final, "operator unavailable: airtel refund: not sent: dial tcp: connection refused", asked
				if err := app.Refunds.FinishRefund(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			return id
		}
		now := time.Now()
		owner := b.login(b.owner.Email)
		for _, c := range []struct {
			id, want string
		}{
			{refund("not-sent", now.Add(-time.Hour), payment.RefundNotSent), "<strong>Not sent: the operator could not be reached (no money moved)</strong>"},
			{refund("cut-short", now.Add(-2*time.Minute), payment.RefundRequested), "<strong>Asked, and no answer was recorded: the request was cut short. Check the operator&#39;s portal before asking again</strong>"},
			{refund("just-asked", now, payment.RefundRequested), "<strong>Asked, no answer yet</strong>"},
		} {
			if page := owner.get("/transactions/" + c.id); page.status != http.StatusOK || !strings.Contains(page.body, c.want) {
				t.Errorf("%s: %d, the page lacks %q", c.id, page.status, c.want)
			}
		}
	})
}

// TestRefundsShown: a late SUCCESS the service refunded by itself shows as
// refunded on its case and on the payment's page, so nobody pays the payer
// back a second time by hand; before, the case said only "Open", and the
// transaction page showed no refund at all.
func TestRefundsShown(t *testing.T) {
	clock := testserver.NewClock(time.Now())
	b := setup(t, testserver.Options{Now: clock.Now})
	ctx := context.Background()
	app := b.s.App
	if _, err := app.Refunds.SetAutoRefundLateSuccess(ctx, b.s.MerchantID, true); err != nil {
		t.Fatal(err)
	}
	tx, err := app.Payments.Initiate(ctx, b.s.MerchantID, payment.CreateRequest{Reference: "late-paid", Amount: 4500,
		Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23560000003"}) // never answers in time
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(payment.DefaultPendingTTL)
	if _, err := app.Payments.Expire(ctx, b.s.MerchantID, tx.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := app.AnswerSandboxPayment(ctx, b.s.MerchantID, tx.ID, true); err != nil { // the payer confirms late
		t.Fatal(err)
	}
	// The auto-refund is the server's job, queued with the late SUCCESS.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		refunds, err := app.Refunds.List(ctx, b.s.MerchantID, tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(refunds) == 1 && refunds[0].Status == payment.RefundRefunded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no auto-refund 10 s after the late SUCCESS: %+v", refunds)
		}
	}
	owner := b.login(b.owner.Email)
	if page := owner.get("/reconciliation").body; !strings.Contains(page, "The payer was refunded 4 500 FCFA (auto-refund: late SUCCESS after TIMEOUT): there is nothing to pay back.") {
		t.Error("the case does not say the payer was refunded")
	}
	if page := owner.get("/transactions/" + tx.ID).body; !strings.Contains(page, "<h2>Refunds</h2>") || !strings.Contains(page, "<strong>Refunded</strong> · 4 500 FCFA") {
		t.Error("the transaction page does not show its refund")
	}
	// In French, the service's own English phrases are translated: the
	// timeline's expiry, the auto-refund's requester, the audit log's
	// auto-refund and command-line actors and the auto-refund setting;
	// its refund sentences are marked as English, and names are not.
	if err := app.AuditLog.Append(ctx, team.AuditEntry{MerchantID: b.s.MerchantID, Email: "command line: amina@ops-1",
		Address: "command line", Action: team.ActionAutoRefundOn, Target: team.AutoRefundTarget, At: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	fr := b.login(b.owner.Email)
	fr.postForm("/account/language", url.Values{"language": {"fr"}})
	for path, want := range map[string][]string{
		"/transactions/" + tx.ID: {"pas de réponse avant l&#39;expiration (expires_at)", "demandé par remboursement automatique\u00a0: SUCCESS tardif après TIMEOUT"},
		"/reconciliation":        {"(remboursement automatique\u00a0: SUCCESS tardif après TIMEOUT)"},
		"/audit": {">momopay\u00a0: remboursement automatique<", ">ligne de commande\u00a0: amina@ops-1<", ">ligne de commande<",
			">un SUCCESS signalé après TIMEOUT<", `<span lang="en">transaction ` + tx.ID + `: refund `, ">" + b.owner.Email + "<"},
	} {
		page := fr.get(path).body
		for _, w := range want {
			if !strings.Contains(page, w) {
				t.Errorf("%s in French lacks %q", path, w)
			}
		}
		for _, english := range []string{"no answer before expires_at", "(auto-refund: late SUCCESS", "momopay: auto-refund", ">command line", "a SUCCESS reported"} {
			if strings.Contains(page, english) {
				t.Errorf("%s in French shows %q", path, english)
			}
		}
	}
	fr.postForm("/account/language", url.Values{"language": {"en"}})

	// Two more late payments, with auto-refund off: one whose refund was
	// asked when the process died (REQUESTED, its fate unknown), one never
	// refunded. Each case shows its own payment's refunds, and only those.
	if _, err := app.Refunds.SetAutoRefundLateSuccess(ctx, b.s.MerchantID, false); err != nil {
		t.Fatal(err)
	}
	late := func(ref string) *payment.Transaction {
		tx, err := app.Payments.Initiate(ctx, b.s.MerchantID, payment.CreateRequest{Reference: ref, Amount: 1200,
			Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23560000003"})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(payment.DefaultPendingTTL)
		if _, err := app.Payments.Expire(ctx, b.s.MerchantID, tx.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := app.AnswerSandboxPayment(ctx, b.s.MerchantID, tx.ID, true); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	doubt, none := late("late-doubt"), late("late-none")
	if err := app.Refunds.StartRefund(ctx, &payment.Refund{ID: uuid.NewString(), MerchantID: b.s.MerchantID, TransactionID: doubt.ID,
		Amount: 1200, RequestedBy: "Ada", Status: payment.RefundRequested, RequestedAt: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	page := owner.get("/reconciliation").body
	cases := map[string]string{}
	for _, c := range caseSections(t, page) {
		for _, tx := range []*payment.Transaction{tx, doubt, none} {
			if strings.Contains(c, "/transactions/"+tx.ID) {
				cases[tx.ID] = c
			}
		}
	}
	const refunded, inDoubt = "The payer was refunded", "A refund was asked and its answer is unknown"
	for _, tt := range []struct {
		name          string
		tx            *payment.Transaction
		refund, doubt bool
	}{{"auto-refunded", tx, true, false}, {"refund in doubt", doubt, false, true}, {"not refunded", none, false, false}} {
		c, ok := cases[tt.tx.ID]
		if !ok {
			t.Errorf("%s: no case on the page", tt.name)
			continue
		}
		if strings.Contains(c, refunded) != tt.refund || strings.Contains(c, inDoubt) != tt.doubt {
			t.Errorf("%s: refunded line %v, in-doubt line %v; want %v, %v", tt.name,
				strings.Contains(c, refunded), strings.Contains(c, inDoubt), tt.refund, tt.doubt)
		}
	}
}

// caseSections splits the reconciliation page into its cases' sections.
func caseSections(t *testing.T, page string) []string {
	t.Helper()
	parts := strings.Split(page, `<section class="card case"`)
	for i := range parts[1:] {
		parts[i+1], _, _ = strings.Cut(parts[i+1], "</section>")
	}
	return parts[1:]
}
