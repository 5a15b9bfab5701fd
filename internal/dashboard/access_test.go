package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// route is one page or action of the transaction, webhook,
// reconciliation and phone pages, with ids filled in by the test.
type route struct {
	method, path string
	form         url.Values
}

// TestMoneyPagesAccess: on every page and action of transactions,
// webhooks, reconciliation and the sandbox phone, viewers read but act on
// nothing (403), developers act, another merchant's ids answer 404 and
// change nothing, and a cross-origin form post is refused.
func TestMoneyPagesAccess(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		rc := newReceiver(t, nil)
		// The other merchant's objects, made through the services.
		otherID, otherKey := b.s.NewMerchant(t)
		theirTx := lateCase(t, b, otherID, otherKey, "theirs-1")
		theirEndpoint, err := b.s.App.Webhooks.CreateEndpoint(ctx, otherID, rc.URL+"/theirs")
		if err != nil {
			t.Fatal(err)
		}
		theirCase, _ := b.s.App.Cases.ForMerchant(ctx, otherID, false)
		theirPending := createPayment(t, b, otherKey, "theirs-2", "AIRTEL", 700)["id"].(string)
		theirTest, err := b.s.App.Webhooks.Test(ctx, otherID, theirEndpoint.ID)
		if err != nil {
			t.Fatal(err)
		}

		// This merchant's own.
		b.addUser(b.s.MerchantID, "dev@example.com", "developer")
		b.addUser(b.s.MerchantID, "viewer@example.com", "viewer")
		dev, viewer := b.login("dev@example.com"), b.login("viewer@example.com")
		ours := lateCase(t, b, b.s.MerchantID, b.s.APIKey, "ours-1")
		endpoint, err := b.s.App.Webhooks.CreateEndpoint(ctx, b.s.MerchantID, rc.URL+"/ours")
		if err != nil {
			t.Fatal(err)
		}
		cases, _ := b.s.App.Cases.ForMerchant(ctx, b.s.MerchantID, false)
		pending := createPayment(t, b, b.s.APIKey, "ours-2", "AIRTEL", 700)["id"].(string)

		reads := []string{"/transactions", "/transactions/export.csv", "/transactions/" + ours, "/webhooks", "/webhooks/deliveries", "/reconciliation"}
		for _, path := range reads {
			if r := viewer.get(path); r.status != http.StatusOK {
				t.Errorf("viewer GET %s: %d", path, r.status)
			}
		}
		acts := []route{
			{"POST", "/webhooks", url.Values{"url": {rc.URL + "/new"}}},
			{"POST", "/webhooks/" + endpoint.ID + "/test", nil},
			{"POST", "/webhooks/" + endpoint.ID + "/disable", nil},
			{"POST", "/webhooks/" + endpoint.ID + "/enable", nil},
			{"POST", "/webhooks/" + endpoint.ID + "/rotate", nil},
			{"GET", "/webhooks/" + endpoint.ID + "/delete", nil},
			{"POST", "/webhooks/resend-undelivered", url.Values{"since": {"2026-01-01T00:00"}}},
			{"POST", "/reconciliation/" + cases[0].ID + "/resolve", url.Values{"note": {"checked"}}},
			{"GET", "/phone", nil},
			{"POST", "/phone/" + pending + "/answer", url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"1234"}}},
			{"POST", "/webhooks/" + endpoint.ID + "/delete", nil},
		}
		do := func(br *browser, rt route) answer {
			if rt.method == "GET" {
				return br.get(rt.path)
			}
			return br.postForm(rt.path, rt.form)
		}
		for _, rt := range acts {
			if r := do(viewer, rt); r.status != http.StatusForbidden {
				t.Errorf("viewer %s %s: %d, want 403", rt.method, rt.path, r.status)
			}
		}
		// The same actions by a developer succeed (200, 201 or 303).
		for _, rt := range acts {
			if r := do(dev, rt); r.status >= 400 {
				t.Errorf("developer %s %s: %d", rt.method, rt.path, r.status)
			}
		}

		// Another merchant's ids: 404 everywhere, for the developer.
		foreign := []route{
			{"GET", "/transactions/" + theirTx, nil},
			{"GET", "/transactions/" + theirPending, nil},
			{"GET", "/transactions/not-an-id", nil},
			{"GET", "/webhooks/deliveries?endpoint=" + theirEndpoint.ID, nil},
			{"POST", "/webhooks/" + theirEndpoint.ID + "/test", nil},
			{"POST", "/webhooks/" + theirEndpoint.ID + "/disable", nil},
			{"POST", "/webhooks/" + theirEndpoint.ID + "/enable", nil},
			{"POST", "/webhooks/" + theirEndpoint.ID + "/rotate", nil},
			{"GET", "/webhooks/" + theirEndpoint.ID + "/delete", nil},
			{"POST", "/webhooks/" + theirEndpoint.ID + "/delete", nil},
			{"POST", "/webhooks/deliveries/" + theirTest.DeliveryID + "/resend", nil},
			{"POST", "/webhooks/resend-undelivered", url.Values{"since": {"2026-01-01T00:00"}, "endpoint": {theirEndpoint.ID}}},
			{"POST", "/reconciliation/" + theirCase[0].ID + "/resolve", url.Values{"note": {"not mine"}}},
			{"POST", "/phone/" + theirPending + "/answer", url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"1234"}}},
		}
		for _, rt := range foreign {
			if r := do(dev, rt); r.status != http.StatusNotFound {
				t.Errorf("developer %s %s (another merchant's): %d, want 404", rt.method, rt.path, r.status)
			}
		}
		// Nothing of theirs changed or leaked.
		if list, _ := b.s.App.Webhooks.Endpoints(ctx, otherID); len(list) != 1 || !list[0].Enabled || list[0].PreviousSecretExpiresAt != nil {
			t.Errorf("the other merchant's endpoint changed: %+v", list)
		}
		if c, _ := b.s.App.Cases.ForMerchant(ctx, otherID, false); c[0].ResolvedAt != nil {
			t.Error("the other merchant's case was resolved")
		}
		if tx, _ := b.s.App.Payments.Get(ctx, otherID, theirPending); tx.Status != "PENDING" {
			t.Errorf("the other merchant's payment is %s", tx.Status)
		}
		for _, path := range []string{"/transactions", "/transactions/export.csv", "/webhooks", "/webhooks/deliveries", "/reconciliation"} {
			if body := dev.get(path).body; strings.Contains(body, "theirs-") || strings.Contains(body, theirEndpoint.ID) || strings.Contains(body, theirTx) {
				t.Errorf("%s shows another merchant's data", path)
			}
		}

		// A cross-origin form post is refused before it acts.
		dev.headers["Origin"] = "http://evil.example"
		dev.headers["Sec-Fetch-Site"] = "cross-site"
		// A form gets a page that says what to do; a JSON call, the envelope.
		if r := dev.postForm("/webhooks", url.Values{"url": {rc.URL + "/csrf"}}); r.status != http.StatusForbidden ||
			!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(r.body, "<h1>Form refused</h1>") || !strings.Contains(r.body, "Host header") {
			t.Errorf("cross-origin add endpoint: %d %s %.300q", r.status, r.header.Get("Content-Type"), r.body)
		}
		login, _ := http.NewRequest(http.MethodPost, b.s.URL+"/auth/login", strings.NewReader(`{"email":"a@b.td","password":"x"}`))
		login.Header.Set("Content-Type", "application/json")
		login.Header.Set("Origin", "http://evil.example")
		if res, err := http.DefaultClient.Do(login); err != nil {
			t.Fatal(err)
		} else if body, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"code":"FORBIDDEN"`) {
			t.Errorf("cross-origin JSON sign-in: %d %s", res.StatusCode, body)
		}
		if r := dev.postForm("/webhooks/resend-undelivered", url.Values{"since": {"2026-01-01T00:00"}}); r.status != http.StatusForbidden {
			t.Errorf("cross-origin re-send: %d", r.status)
		}
		// A form sent by a caller that asks for JSON gets the envelope, as
		// its other refusals (403 for a role, 401, 404…) do.
		dev.headers["Accept"] = "application/json"
		if r := dev.postForm("/webhooks", url.Values{"url": {rc.URL + "/csrf"}}); r.status != http.StatusForbidden || r.errorCode() != "FORBIDDEN" {
			t.Errorf("cross-origin form asking for JSON: %d %.200q", r.status, r.body)
		}
		delete(dev.headers, "Accept")
		// Without Origin and Sec-Fetch-Site (an old browser), a Referer of
		// another site is refused too; one of this site passes.
		delete(dev.headers, "Origin")
		delete(dev.headers, "Sec-Fetch-Site")
		dev.headers["Referer"] = "https://evil.example/page"
		if r := dev.postForm("/webhooks", url.Values{"url": {rc.URL + "/csrf"}}); r.status != http.StatusForbidden ||
			!strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("add endpoint with only a cross-site Referer: %d, CSP %q, X-Frame-Options %q; want 403 with the dashboard's headers",
				r.status, r.header.Get("Content-Security-Policy"), r.header.Get("X-Frame-Options"))
		}
		dev.headers["Referer"] = b.s.URL + "/webhooks"
		if r := dev.postForm("/webhooks", url.Values{"url": {rc.URL + "/same-site"}}); r.status != http.StatusCreated {
			t.Errorf("add endpoint with this site's Referer: %d", r.status)
		}
		delete(dev.headers, "Referer")
		for _, e := range func() []string {
			list, _ := b.s.App.Webhooks.Endpoints(ctx, b.s.MerchantID)
			var urls []string
			for _, e := range list {
				urls = append(urls, e.URL)
			}
			return urls
		}() {
			if strings.HasSuffix(e, "/csrf") {
				t.Error("a cross-origin post added an endpoint")
			}
		}
	})
}
