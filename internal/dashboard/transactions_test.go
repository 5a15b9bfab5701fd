package dashboard_test

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// payer is a number the sandbox never answers for: its payments wait for
// the simulated phone (or their expiry).
const payer = "+23566000001"

// createPayment asks for a payment through /v1 with the merchant's key, as
// a merchant's server does, and returns it as the API answered.
func createPayment(t *testing.T, b *bundle, apiKey, reference, operator string, amount int64) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"reference":%q,"amount":%d,"currency":"XAF","operator":%q,"phone_number":%q,"description":"2 x café"}`,
		reference, amount, operator, payer)
	req, _ := http.NewRequest("POST", b.s.URL+"/v1/transactions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tx map[string]any
	json.NewDecoder(resp.Body).Decode(&tx)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create %s: %d %v", reference, resp.StatusCode, tx)
	}
	return tx
}

// insertTransactions writes n settled transactions of merchant straight
// into the table (no push, no jobs), one every second back from start,
// alternating SUCCESS/AIRTEL and FAILED/MOOV: enough rows to page and to
// export in several batches without driving a thousand payments.
func insertTransactions(t *testing.T, b *bundle, merchantID string, n int, start time.Time) {
	t.Helper()
	db := b.s.App.DB
	batch := strings.ToUpper(uuid.NewString()[:3]) // internal_ref is unique across merchants
	err := db.InTx(context.Background(), func(tx *sql.Tx) error {
		for i := range n {
			status, op := "SUCCESS", "AIRTEL"
			if i%2 == 1 {
				status, op = "FAILED", "MOOV"
			}
			at := start.Add(-time.Duration(i) * time.Second)
			_, err := tx.Exec(`INSERT INTO transactions (id, merchant_id, reference, internal_ref, amount, currency, operator,
				phone_number, description, status, created_at, updated_at, expires_at, push_in_flight)
				VALUES ($1, $2, $3, $4, $5, 'XAF', $6, $7, $8, $9, $10, $10, $11, FALSE)`,
				uuid.Must(uuid.NewV7()).String(), merchantID, fmt.Sprintf("bulk-%05d", i), fmt.Sprintf("SERVICE-%s%05d", batch, i),
				1000+i, op, payer, `=HYPERLINK("x")`, status, db.Time(at), db.Time(at.Add(5*time.Minute)))
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTransactionList: the list takes the API's filters, a reference and
// pages of 50, shows only the merchant's own, and refuses bad filters
// with the field named.
func TestTransactionList(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		now := time.Now().UTC()
		insertTransactions(t, b, b.s.MerchantID, 120, now)
		other, _ := b.s.NewMerchant(t)
		insertTransactions(t, b, other, 3, now)
		b.addUser(b.s.MerchantID, "viewer@example.com", "viewer")
		br := b.login("viewer@example.com") // reading needs no more than viewer

		rowsOf := func(body string) []string {
			var refs []string
			for _, m := range listedRef.FindAllStringSubmatch(body, -1) {
				refs = append(refs, m[1])
			}
			return refs
		}
		// walk follows the "older" links from a list page to the end and
		// returns every reference listed, in order, and the pages seen.
		walk := func(query string) ([]string, []answer) {
			t.Helper()
			var refs []string
			var pages []answer
			path := "/transactions?" + query
			for range 10 {
				r := br.get(path)
				if r.status != http.StatusOK {
					t.Fatalf("%s: %d", path, r.status)
				}
				refs, pages = append(refs, rowsOf(r.body)...), append(pages, r)
				m := olderLink.FindStringSubmatch(r.body)
				if m == nil {
					return refs, pages
				}
				path = html.UnescapeString(m[1])
			}
			t.Fatalf("%s: more than 10 pages", query)
			return nil, nil
		}
		refs, pages := walk("")
		if len(pages) != 3 || len(refs) != 120 || len(rowsOf(pages[0].body)) != 50 || len(rowsOf(pages[2].body)) != 20 {
			t.Fatalf("pages: %d, rows %d", len(pages), len(refs))
		}
		for i, ref := range refs {
			if ref != fmt.Sprintf("bulk-%05d", i) {
				t.Fatalf("row %d is %s: not newest first, or repeated", i, ref)
			}
		}
		if strings.Contains(pages[0].body, `rel="prev"`) || !strings.Contains(pages[2].body, `rel="prev"`) {
			t.Error("the newer link is on the first page, or missing on the last")
		}
		// "Newer" from the last page gives the middle page back.
		m := newerLink.FindStringSubmatch(pages[2].body)
		if back := br.get(html.UnescapeString(m[1])); strings.Join(rowsOf(back.body), ",") != strings.Join(rowsOf(pages[1].body), ",") {
			t.Error("newer from the last page is not the middle page")
		}
		tests := []struct {
			query string
			want  int
		}{
			{"status=SUCCESS", 60},
			{"operator=MOOV", 60},
			{"status=SUCCESS&operator=MOOV", 0},
			{"q=bulk-00007", 1},
			{"q=bulk-00007&status=SUCCESS", 0},
			{"q=unknown-ref", 0},
			{"from=" + now.Add(48*time.Hour).In(ndjamena).Format(time.DateOnly), 0},
			{"to=" + now.Add(-48*time.Hour).In(ndjamena).Format(time.DateOnly), 0},
			{"from=" + now.Add(-48*time.Hour).In(ndjamena).Format(time.DateOnly) + "&to=" + now.Add(48*time.Hour).In(ndjamena).Format(time.DateOnly), 120},
		}
		for _, tc := range tests {
			if refs, _ := walk(tc.query); len(refs) != tc.want {
				t.Errorf("%s: %d transactions, want %d", tc.query, len(refs), tc.want)
			}
		}
		// Days the wrong way round are an error on the last day, not "no
		// match"; one day from and to is a range.
		if r := br.get("/transactions?from=2026-11-27&to=2026-11-20"); r.status != http.StatusBadRequest ||
			!strings.Contains(r.body, `value="2026-11-20" aria-invalid="true" aria-describedby="f-to-error"`) ||
			!strings.Contains(r.body, `<p class="field-error" id="f-to-error">The last day is before the first`) {
			t.Errorf("from after to: %d\n%s", r.status, r.body)
		}
		if r := br.get("/transactions?from=2026-11-20&to=2026-11-20"); r.status != http.StatusOK {
			t.Errorf("from and to the same day: %d", r.status)
		}
		// One transaction is one, not "1 transactions".
		if r := br.get("/transactions?q=bulk-00007"); !strings.Contains(r.body, "1 transaction on this page.") {
			t.Errorf("one transaction found is not said in the singular")
		}
		for _, bad := range []string{"status=LOST", "operator=MTN", "from=yesterday", "to=2026-13-01", "before=x", "after=1", "q=" + strings.Repeat("r", 65),
			"q=a%00b", "q=a%ffb", "q=two+words"} { // a NUL or invalid UTF-8 was a 500 on PostgreSQL
			r := br.get("/transactions?" + bad)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, `class="field-error"`) || !strings.Contains(r.body, "Please correct the field below.") {
				t.Errorf("%s: %d, want 400 with the field named", bad, r.status)
			}
			if err := errorsTiedToFields(r.body); err != nil {
				t.Errorf("%s: %v", bad, err)
			}
		}
	})
}

var (
	listedRef = regexp.MustCompile(`<td class="wrap"><a href="/transactions/[0-9a-f-]{36}">([^<]+)</a>`)
	olderLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
	newerLink = regexp.MustCompile(`<a href="([^"]+)" rel="prev">`)
)

// ndjamena is the dashboard's clock (UTC+1).
var ndjamena = time.FixedZone("WAT", 3600)

// TestExportCSV: the export has every field of every matching transaction,
// follows the filters, is streamed in chunks (no Content-Length: nothing
// buffers the whole file), and defuses spreadsheet formulas.
func TestExportCSV(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		now := time.Now().UTC()
		insertTransactions(t, b, b.s.MerchantID, 1203, now)
		other, _ := b.s.NewMerchant(t)
		insertTransactions(t, b, other, 5, now)
		br := b.login(b.owner.Email)

		read := func(query string) ([][]string, answer) {
			t.Helper()
			r := br.get("/transactions/export.csv?" + query)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
				!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment;") {
				t.Fatalf("export %s: %d %v", query, r.status, r.header)
			}
			rows, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
			if err != nil {
				t.Fatalf("export %s is not CSV: %v", query, err)
			}
			return rows, r
		}
		rows, r := read("")
		if len(rows) != 1204 || strings.Join(rows[0], ",") != "id,reference,internal_ref,amount,currency,operator,phone_number,description,status,created_at,updated_at,expires_at" {
			t.Fatalf("whole export: %d lines, header %v", len(rows), rows[0])
		}
		if r.header.Get("Content-Length") != "" {
			t.Errorf("the export was buffered whole: Content-Length %s", r.header.Get("Content-Length"))
		}
		seen := map[string]bool{}
		for i, row := range rows[1:] {
			if row[1] != fmt.Sprintf("bulk-%05d", i) || seen[row[0]] {
				t.Fatalf("row %d: %v (newest first, each once)", i, row[:2])
			}
			seen[row[0]] = true
			if row[7] != `'=HYPERLINK("x")` {
				t.Fatalf("row %d: description %q is not defused", i, row[7])
			}
		}
		if first := rows[1]; first[3] != "1000" || first[4] != "XAF" || first[5] != "AIRTEL" || first[6] != payer || first[8] != "SUCCESS" ||
			first[9] != now.Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000Z") {
			t.Errorf("first row: %v", first)
		}
		if rows, _ := read("status=FAILED&operator=MOOV"); len(rows) != 602 {
			t.Errorf("FAILED MOOV export: %d lines, want 601 and the header", len(rows))
		}
		if rows, _ := read("q=bulk-01000"); len(rows) != 2 || rows[1][1] != "bulk-01000" {
			t.Errorf("export by reference: %v", rows)
		}
		// A bad filter leads to the list, which names it in the user's
		// language, without the export button or a count of nothing.
		if r := br.get("/transactions/export.csv?status=nope&operator=AIRTEL"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/transactions?status=nope&operator=AIRTEL" {
			t.Errorf("bad filter: %d, to %q", r.status, r.header.Get("Location"))
		}
		if r := br.get("/transactions?status=nope"); r.status != http.StatusBadRequest || strings.Contains(r.body, "download") ||
			strings.Contains(r.body, "on this page") || strings.Contains(r.body, "No transaction matches") {
			t.Errorf("the list with a bad filter: %d, offers an export %v or counts what it did not read",
				r.status, strings.Contains(r.body, "download"))
		}
	})
}

// receiver is a merchant's webhook endpoint on loopback, recording every
// request; answer writes the reply to the n-th one (nil: 200 "thanks").
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter)
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), body})
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(n, w)
			return
		}
		io.WriteString(w, "thanks")
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// waitFor waits until the receiver has n requests.
func (rc *receiver) waitFor(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(rc.requests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests, want %d", len(rc.requests()), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return rc.requests()
}

// TestTransactionDetailAndPhone walks a payment by hand: created through
// /v1, shown PENDING (refreshing itself), confirmed on the sandbox phone
// with a PIN, delivered to the merchant's endpoint, and shown SUCCESS with
// its timeline and its delivery's attempt. Another payment is refused.
// The phone is for developers and owners, and another merchant's payment
// is not found on any of these pages.
func TestTransactionDetailAndPhone(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		rc := newReceiver(t, nil)
		b.addUser(b.s.MerchantID, "dev@example.com", "developer")
		b.addUser(b.s.MerchantID, "viewer@example.com", "viewer")
		dev := b.login("dev@example.com")
		if r := dev.postForm("/webhooks", url.Values{"url": {rc.URL + "/hook"}}); r.status != http.StatusCreated {
			t.Fatalf("add endpoint: %d", r.status)
		}
		tx := createPayment(t, b, b.s.APIKey, "order-1", "AIRTEL", 1500)
		id := tx["id"].(string)

		pending := dev.get("/transactions/" + id)
		for _, want := range []string{"<title>Transaction order-1 · momopay</title>", "1 500 FCFA", tx["internal_ref"].(string), payer[1:], "<bdi>2 x café</bdi>", `data-refresh-seconds="5"`,
			"Created", "Payment request accepted by the operator", "No webhook was sent for this transaction."} {
			if !strings.Contains(pending.body, want) {
				t.Errorf("the pending page lacks %q", want)
			}
		}

		// A number that is none: the field says why, under the same
		// summary as every refused form.
		if r := dev.get("/phone?number=" + url.QueryEscape("+235abc")); r.status != http.StatusBadRequest || !strings.Contains(r.body, "Please correct the field below.") {
			t.Errorf("a bad number: %d, summary shown: %v", r.status, strings.Contains(r.body, "Please correct the field below."))
		} else if err := errorsTiedToFields(r.body); err != nil {
			t.Errorf("a bad number: %v", err)
		}
		phone := dev.get("/phone?number=" + url.QueryEscape("66 00 00 01"))
		if phone.status != http.StatusOK || !strings.Contains(phone.body, "1 500 FCFA") || !strings.Contains(phone.body, "/phone/"+id+"/answer") {
			t.Fatalf("phone: %d", phone.status)
		}
		// The merchant's description is isolated (bdi): an Arabic or a
		// right-to-left override one does not reorder the text around it.
		if !strings.Contains(phone.body, " · <bdi>2 x café</bdi>") {
			t.Error("phone: the description is not isolated")
		}
		if r := dev.postForm("/phone/"+id+"/answer", url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"12"}}); r.status != http.StatusUnprocessableEntity ||
			!strings.Contains(r.body, `aria-invalid="true" aria-describedby="pin-`+id+`-error"`) || !strings.Contains(r.body, `<p class="field-error" id="pin-`+id+`-error">Enter four digits.</p>`) {
			t.Errorf("a short PIN: %d, not shown under its field", r.status)
		}
		r := dev.postForm("/phone/"+id+"/answer", url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"1234"}})
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/phone?number=%2B23566000001" {
			t.Fatalf("confirm: %d %s", r.status, r.header.Get("Location"))
		}
		if after := dev.get(r.header.Get("Location")); !strings.Contains(after.body, "Payment order-1 confirmed.") || strings.Contains(after.body, "/phone/"+id+"/answer") {
			t.Error("after confirming: no flash, or the request is still listed")
		}
		got := rc.waitFor(t, 1)
		if !strings.Contains(string(got[0].body), `"event":"transaction.success"`) {
			t.Errorf("webhook: %s", got[0].body)
		}
		deadline := time.Now().Add(60 * time.Second)
		var done answer
		for {
			done = dev.get("/transactions/" + id)
			if strings.Contains(done.body, "HTTP 200") || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, want := range []string{"Succeeded", "Sandbox payer&#39;s answer", "Final status",
			"transaction.success", rc.URL + "/hook", "Delivered", "HTTP 200", " ms", "thanks"} {
			if !strings.Contains(done.body, want) {
				t.Errorf("the settled page lacks %q", want)
			}
		}
		if strings.Contains(done.body, "data-refresh-seconds") {
			t.Error("a final transaction's page still refreshes itself")
		}

		refused := createPayment(t, b, b.s.APIKey, "order-2", "MOOV", 2500)["id"].(string)
		if r := dev.postForm("/phone/"+refused+"/answer", url.Values{"number": {payer}, "answer": {"refuse"}}); r.status != http.StatusSeeOther {
			t.Fatalf("refuse: %d", r.status)
		}
		if got, _ := b.s.App.Payments.Get(context.Background(), b.s.MerchantID, refused); got.Status != payment.StatusFailed {
			t.Errorf("refused payment is %s", got.Status)
		} else if page := dev.get("/transactions/" + refused).body; got.FailureReason == "" || !strings.Contains(page, "Failure reason") || !strings.Contains(page, "<code>"+got.FailureReason+"</code>") {
			t.Errorf("the refused payment's page lacks its failure reason %q", got.FailureReason)
		}
		// Answered once: a second answer finds nothing pending.
		if r := dev.postForm("/phone/"+refused+"/answer", url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"1234"}}); r.status != http.StatusNotFound {
			t.Errorf("answering a final payment: %d", r.status)
		}

		viewer := b.login("viewer@example.com")
		if r := viewer.get("/phone"); r.status != http.StatusForbidden {
			t.Errorf("viewer on the phone: %d", r.status)
		}
		if r := viewer.postForm("/phone/"+id+"/answer", url.Values{"number": {payer}, "answer": {"refuse"}}); r.status != http.StatusForbidden {
			t.Errorf("viewer answering: %d", r.status)
		}

		_, otherKey := b.s.NewMerchant(t)
		theirs := createPayment(t, b, otherKey, "their-1", "AIRTEL", 900)["id"].(string)
		if r := dev.get("/transactions/" + theirs); r.status != http.StatusNotFound {
			t.Errorf("another merchant's transaction: %d", r.status)
		}
		if r := dev.postForm("/phone/"+theirs+"/answer", url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"1234"}}); r.status != http.StatusNotFound {
			t.Errorf("answering another merchant's payment: %d", r.status)
		}
		if r := dev.get("/phone?number=" + url.QueryEscape(payer)); strings.Contains(r.body, theirs) {
			t.Error("the phone lists another merchant's request")
		}
	})
}

// TestPhoneAnswersOnce: two people answer one request on the sandbox phone
// at the same instant, one confirming and one refusing. The request is
// answered once: one final state, no reconciliation case, and the other
// person is told the request is no longer waiting. (The losing answer was
// kept as a contradicting late report: a case for nothing, in 8 to 12 of
// 20 tries.)
func TestPhoneAnswersOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		b.addUser(b.s.MerchantID, "dev@example.com", "developer")
		owner, dev := b.login(b.owner.Email), b.login("dev@example.com")
		for i := range 6 {
			id := createPayment(t, b, b.s.APIKey, fmt.Sprintf("twice-%d", i), []string{"AIRTEL", "MOOV"}[i%2], 1500)["id"].(string)
			codes := make([]int, 2)
			var wg sync.WaitGroup
			for j, br := range []*browser{owner, dev} {
				wg.Go(func() {
					form := url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"1234"}}
					if j == 1 {
						form = url.Values{"number": {payer}, "answer": {"refuse"}}
					}
					codes[j] = br.postForm("/phone/"+id+"/answer", form).status
				})
			}
			wg.Wait()
			if n := strings.Count(fmt.Sprint(codes), "303"); n != 1 || !slices.Contains(codes, http.StatusNotFound) {
				t.Errorf("payment %d: the two answers got %v, want one 303 and one 404", i, codes)
			}
			if i == 0 {
				// The late one says why, in the phone's page.
				late := dev.postForm("/phone/"+id+"/answer", url.Values{"number": {payer}, "answer": {"refuse"}})
				if late.status != http.StatusNotFound || !strings.Contains(late.body, "no longer waits for an answer") {
					t.Errorf("a late answer: %d, want 404 saying the request no longer waits", late.status)
				}
			}
		}
		cases, err := b.s.App.Cases.ForMerchant(context.Background(), b.s.MerchantID, false)
		if err != nil || len(cases) != 0 {
			t.Errorf("answers at once opened %d reconciliation cases (%v), want none", len(cases), err)
		}
	})
}
