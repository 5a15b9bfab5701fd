package browsertest

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/operator/sandbox"
)

// The journey's payment and webhook steps, over the transaction, sandbox
// phone and webhook pages.

// payerNumber is not one of the sandbox's scripted numbers, so its payments
// wait for an answer on the simulated phone.
const payerNumber = "+23566123456"

// addEndpoint registers the local receiver; its secret is shown once.
func (j *journey) addEndpoint() {
	t, b := j.t, j.b
	b.open("/webhooks")
	b.check("webhooks-empty")
	b.fill("#wh-url", j.rc.URL+"/momopay")
	token := run(b, "read the form's token", chromedp.Value(chromedp.CSS(`main form[action="/webhooks"] input[name=request]`)))
	b.submit(`main form[action="/webhooks"] button[type=submit]`)
	j.secret = run(b, "read the endpoint's secret", chromedp.Value(chromedp.CSS("#new-secret")))
	if !strings.HasPrefix(j.secret, "whsec_") {
		t.Fatalf("adding an endpoint shows %q; want its whsec_ secret\n%s", j.secret, b.bodyText())
	}
	b.check("webhook-secret")
	b.checkNarrow("webhook-secret")
	b.submit(`main a[href="/webhooks"]`)
	if html := run(b, "read the page", chromedp.OuterHTML(chromedp.CSS("html"))); strings.Contains(html, j.secret) {
		t.Fatalf("the webhooks page shows the endpoint's secret")
	}
	if !strings.Contains(b.bodyText(), j.rc.URL+"/momopay") {
		t.Fatalf("the webhooks page does not list the new endpoint:\n%s", b.bodyText())
	}
	b.check("webhooks")
	b.checkNarrow("webhooks")

	// The same form sent again (as a reload of the secret's page does)
	// adds nothing, and says so.
	b.do("put back the first form's token", chromedp.SetValue(chromedp.CSS(`main form[action="/webhooks"] input[name=request]`), token))
	b.fill("#wh-url", j.rc.URL+"/momopay")
	if resp := b.submit(`main form[action="/webhooks"] button[type=submit]`); resp == nil || resp.Status != http.StatusConflict {
		t.Fatalf("the add form sent again: %v; want 409", resp)
	}
	if b.has("#new-secret") || !strings.Contains(b.bodyText(), "already added") {
		t.Fatalf("the add form sent again shows a secret, or does not say it was already added:\n%s", b.bodyText())
	}
	b.check("webhook-added-again")

	// A refused field takes the focus, so that the keyboard and a screen
	// reader start from it and its error: the same URL in a new form.
	// (Placed by the page's script: without it the page still says which
	// field is wrong, and the focus starts at the top.)
	b.open("/webhooks")
	b.fill("#wh-url", j.rc.URL+"/momopay")
	if resp := b.submit(`main form[action="/webhooks"] button[type=submit]`); resp == nil || resp.Status != http.StatusUnprocessableEntity {
		t.Fatalf("the same URL in a new form: %v; want 422", resp)
	}
	if f := b.focused(); f != "input#wh-url" && !b.noScript {
		t.Errorf("after the refused URL the focus is on %q; want the URL field", f)
	}
	b.check("webhook-url-refused")
}

// createPayment asks for a payment through /v1 with the dashboard's key,
// as the merchant's server would, and returns it.
func (j *journey) createPayment(phone string, amount int64) *client.Transaction {
	j.t.Helper()
	c := client.New(j.key, client.WithBaseURL(j.srv.URL))
	tx, err := c.CreateTransaction(context.Background(), client.CreateTransactionParams{
		Reference: "order-" + strings.ToLower(rand.Text()[:8]), Amount: amount, Operator: client.OperatorAirtel,
		PhoneNumber: phone, Description: "Savon x3",
	})
	if err != nil {
		j.t.Fatalf("create a payment with the dashboard's key: %v", err)
	}
	return tx
}

// findPayment searches the list by reference and opens the payment.
func (j *journey) findPayment() {
	t, b := j.t, j.b
	b.open("/transactions")
	b.fill("#f-q", j.ref)
	b.submit(`main form[action="/transactions"] button[type=submit]`)
	if q := b.path(); !strings.Contains(q, "q="+url.QueryEscape(j.ref)) {
		t.Errorf("searching by reference landed on %s", q)
	}
	txt := b.bodyText()
	if !strings.Contains(txt, j.ref) || !strings.Contains(txt, "1 500 FCFA") {
		t.Fatalf("the list searched for %s does not show it as 1 500 FCFA:\n%s", j.ref, txt)
	}
	b.check("transactions")
	b.checkNarrow("transactions")
	b.submit(`main a[href="/transactions/` + j.txID + `"]`)
	if !strings.Contains(b.text("main .page-head .status"), "ending") && !strings.Contains(b.bodyText(), "PENDING") {
		t.Errorf("the new payment's page does not show it pending:\n%s", b.bodyText())
	}
	b.check("transaction-pending")
}

// confirmOnPhone plays the payer on the simulated phone, while a second tab
// keeps the payment's page open: that page must turn SUCCESS by itself.
func (j *journey) confirmOnPhone() {
	t, b := j.t, j.b
	watch := b.newTab()
	watch.open("/transactions/" + j.txID)
	if !watch.noScript {
		// While the payment waits for its payer, the page reads itself
		// again every 5 s but does not reload: a keyboard user's focus
		// stays where it is (a reload every 5 s sent it back to the top).
		link := `main a[href="/transactions/` + j.txID + `"]`
		run(watch, "focus the refresh link and mark the page", chromedp.Evaluate[bool](
			`document.querySelector('`+link+`').focus(), window.stillHere = true`))
		looked := run(watch, "wait for two background reads", chromedp.Poll[bool](
			`performance.getEntriesByType('resource').filter(e => e.initiatorType === 'fetch' && e.name === location.href).length >= 2`,
			chromedp.WithPollingTimeout(25*time.Second)))
		here := run(watch, "read the mark and the focus", chromedp.Evaluate[bool](
			`window.stillHere === true && document.activeElement === document.querySelector('`+link+`')`))
		if !looked || !here {
			t.Errorf("the pending payment's page: read itself again twice %v; kept the page and the focus %v", looked, here)
		}
	}

	b.open("/phone")
	b.check("phone")
	b.fill("#ph-number", payerNumber)
	b.submit(`main form[action="/phone"] button[type=submit]`)
	if !strings.Contains(b.bodyText(), j.ref) {
		t.Fatalf("the phone shows no request for %s:\n%s", j.ref, b.bodyText())
	}
	b.check("phone-request")
	b.checkNarrow("phone-request")
	form := `main form[action="/phone/` + j.txID + `/answer"]`
	// No PIN (the browser lets an empty one through): the server's
	// refusal is shown under this request's PIN field.
	b.submit(form + ` button[value=confirm]`)
	if txt := b.bodyText(); !strings.Contains(txt, "Enter four digits.") || !strings.Contains(txt, "Please correct the field below.") {
		t.Errorf("a confirmation without PIN: the phone says:\n%s", txt)
	}
	b.check("phone-pin-error")
	b.fill(form+" input[name=pin]", "1234")
	b.submit(form + ` button[value=confirm]`)
	if txt := b.bodyText(); !strings.Contains(txt, j.ref) || strings.Contains(txt, "rror") {
		t.Errorf("after confirming, the phone says:\n%s", txt)
	}
	b.check("phone-confirmed")

	// The payment's page, refreshing itself, shows SUCCESS and the delivery.
	watch.waitText(regexp.MustCompile(`SUCCESS`), false)
	d := j.rc.await(t, 0, "the payment's success event", func(d delivery) bool {
		return d.Event == "transaction.success" && d.Data["id"] == j.txID
	})
	if !d.signedWith(t, j.secret) {
		t.Errorf("the success event's signatures %v are not by the endpoint's secret", d.Signatures)
	}
	watch.waitText(regexp.MustCompile(`transaction\.success[\s\S]*`+regexp.QuoteMeta(j.rc.URL)), true)
	watch.unfold()
	watch.waitText(regexp.MustCompile(`HTTP 200`), false)
	j.checkTimes(watch)
	watch.check("transaction")
	watch.checkNarrow("transaction")
}

// sendTest sends the test event and reads its result on the page.
func (j *journey) sendTest() {
	t, b := j.t, j.b
	before := len(j.rc.deliveries())
	b.open("/webhooks")
	b.submit(`main form[action$="/test"] button[type=submit]`)
	txt := b.waitText(regexp.MustCompile(`HTTP 200`), false)
	if !strings.Contains(txt, "Delivered") {
		t.Errorf("the test event's result does not say delivered:\n%s", txt)
	}
	d := j.rc.await(t, before, "the test event", func(d delivery) bool { return d.Event == "transaction.test" })
	if !d.signedWith(t, j.secret) {
		t.Errorf("the test event is not signed with the endpoint's secret")
	}
	b.check("webhook-tested")
}

// rotate makes a new secret; the old one stays valid a while, so deliveries
// carry both signatures.
func (j *journey) rotate() {
	t, b := j.t, j.b
	b.open("/webhooks")
	const form = `main form[action$="/rotate"]`
	token := run(b, "read the form's token", chromedp.Value(chromedp.CSS(form+` input[name=request]`)))
	b.submit(form + ` button[type=submit]`)
	secret := run(b, "read the new secret", chromedp.Value(chromedp.CSS("#new-secret")))
	if !strings.HasPrefix(secret, "whsec_") || secret == j.secret {
		t.Fatalf("rotating shows %q; want a new whsec_ secret", secret)
	}
	b.check("webhook-rotated")
	j.oldSecret, j.secret = j.secret, secret

	// The same form sent again (as a reload does) rotates nothing, and
	// says so; the deliveries that follow check both secrets still sign.
	b.open("/webhooks")
	b.do("put back the first form's token", chromedp.SetValue(chromedp.CSS(form+` input[name=request]`), token))
	if resp := b.submit(form + ` button[type=submit]`); resp == nil || resp.Status != http.StatusConflict {
		t.Fatalf("the rotation sent again: %v; want 409", resp)
	}
	if b.has("#new-secret") || !strings.Contains(b.bodyText(), "already rotated") {
		t.Fatalf("the rotation sent again shows a secret, or does not say it was already rotated:\n%s", b.bodyText())
	}
	b.check("webhook-rotated-again")
}

// resend: a payment whose webhook the receiver refuses stays pending in the
// history; after the receiver recovers, re-sending it by hand delivers it,
// signed with both secrets.
func (j *journey) resend() {
	t, b := j.t, j.b
	j.rc.answer(http.StatusInternalServerError)
	before := len(j.rc.deliveries())
	tx := j.createPayment(sandbox.PhoneSuccess, 2500) // the sandbox confirms it by itself
	j.rc.await(t, before, "the refused success event", func(d delivery) bool {
		return d.Event == "transaction.success" && d.Data["id"] == tx.ID
	})
	j.rc.answer(http.StatusOK)

	b.open("/webhooks/deliveries?state=pending")
	// The refused attempt is written down once it is over.
	b.waitText(regexp.MustCompile(`HTTP 500`), true)
	b.check("deliveries-pending")
	b.checkNarrow("deliveries-pending")
	before = len(j.rc.deliveries())
	resend := `main form[action$="/resend"] button[type=submit]`
	b.unfold()
	b.submit(resend)
	d := j.rc.await(t, before, "the re-sent success event", func(d delivery) bool {
		return d.Event == "transaction.success" && d.Data["id"] == tx.ID
	})
	if !d.signedWith(t, j.secret) || !d.signedWith(t, j.oldSecret) {
		t.Errorf("the re-sent delivery carries %d signature(s); want one by the new secret and one by the old", len(d.Signatures))
	}
	b.open("/webhooks/deliveries")
	b.unfold() // every attempt table in view, for axe-core and the width check
	b.check("deliveries")
	b.checkNarrow("deliveries")
	b.open("/webhooks/deliveries?state=pending")
	if b.has(resend) {
		t.Errorf("the re-sent delivery is still pending:\n%s", b.bodyText())
	}
}

// checkTimes: the page shows times in N'Djamena time (UTC+1), with the UTC
// instant on hover.
func (j *journey) checkTimes(b *Browser) {
	t := j.t
	type shown struct {
		DateTime string `json:"dt"`
		Title    string `json:"title"`
		Text     string `json:"text"`
	}
	times := run(b, "read the times", chromedp.Evaluate[[]shown](
		`[...document.querySelectorAll('main time')].map(e => ({dt: e.dateTime, title: e.title, text: e.textContent.trim()}))`))
	if len(times) == 0 {
		t.Fatalf("the payment's page shows no <time>")
	}
	for _, tm := range times {
		at, err := time.Parse(time.RFC3339, tm.DateTime)
		if err != nil {
			t.Errorf("<time datetime=%q>: %v", tm.DateTime, err)
			continue
		}
		local := at.UTC().Add(time.Hour).Format("02/01/2006 15:04")
		if !strings.HasPrefix(tm.Text, local) || !strings.HasSuffix(tm.Title, "UTC") ||
			!strings.Contains(tm.Title, at.UTC().Format("15:04")) {
			t.Errorf("a time shows %q titled %q for %s; want N'Djamena time %s… and the UTC time on hover", tm.Text, tm.Title, tm.DateTime, local)
		}
	}
}
