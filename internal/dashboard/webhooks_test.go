package dashboard_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/webhook"
)

var shownSecret = regexp.MustCompile(`whsec_[A-Za-z0-9+/]{43}=`)

// verifies checks webhook-signature as stock Standard Webhooks verifiers
// do: any one of its space-separated signatures made with secret.
func verifies(secret string, r received) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(r.header.Get("webhook-id") + "." + r.header.Get("webhook-timestamp") + "."))
	mac.Write(r.body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(r.header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// endpointIDs lists the endpoint ids a webhooks page links to.
func endpointIDs(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`/webhooks/([0-9a-f-]{36})/delete`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// settleByPhone answers a payment on the sandbox phone, as a developer.
func settleByPhone(t *testing.T, br *browser, id string, confirm bool) {
	t.Helper()
	form := url.Values{"number": {payer}, "answer": {"refuse"}}
	if confirm {
		form = url.Values{"number": {payer}, "answer": {"confirm"}, "pin": {"0000"}}
	}
	if r := br.postForm("/phone/"+id+"/answer", form); r.status != http.StatusSeeOther {
		t.Fatalf("answer %s: %d %s", id, r.status, r.body)
	}
}

// TestTestEventsBoundedPerEndpoint: while two sends asked by hand wait on
// an endpoint that does not answer, the test button sends no third one:
// it leads back to the webhooks page, which says why, in French too.
func TestTestEventsBoundedPerEndpoint(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		release, arrived := make(chan struct{}), make(chan struct{}, 2)
		rc := newReceiver(t, func(_ int, w http.ResponseWriter) {
			arrived <- struct{}{}
			<-release
		})
		defer close(release)
		e, err := b.s.App.Webhooks.CreateEndpoint(ctx, b.s.MerchantID, rc.URL)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			go b.s.App.Webhooks.Test(ctx, b.s.MerchantID, e.ID)
		}
		<-arrived
		<-arrived
		br := b.login(b.owner.Email)
		for _, c := range []struct{ lang, want string }{
			{"en", "Not sent: two test events or re-sends to this endpoint are already waiting"},
			{"fr", "Non envoyé\u00a0: deux envois de test ou renvois vers ce point de réception attendent déjà"},
		} {
			br.headers["Accept-Language"] = c.lang
			r := br.postForm("/webhooks/"+e.ID+"/test", nil)
			if r.status != http.StatusSeeOther || r.header.Get("Location") != "/webhooks" {
				t.Fatalf("a third test event (%s): %d to %q, want 303 to /webhooks", c.lang, r.status, r.header.Get("Location"))
			}
			if page := br.get("/webhooks"); !strings.Contains(html.UnescapeString(page.body), c.want) {
				t.Errorf("the webhooks page (%s) does not say why:\n%s", c.lang, page.body)
			}
		}
		if n := len(rc.requests()); n != 2 {
			t.Errorf("the endpoint got %d test events, want 2", n)
		}
	})
}

// TestWebhookEndpointPages: adding an endpoint follows the mode's URL rules
// and shows its secret once (no-store); the test event's answer is shown
// on the page the POST leads to, which reloads without sending another;
// an endpoint can be disabled, enabled, rotated (the new secret shown
// once, and both secrets verify deliveries meanwhile) and deleted after a
// confirmation, which then says it is deleted (404 to another merchant);
// each change is in the audit log, never a secret.
func TestWebhookEndpointPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		rc := newReceiver(t, nil)
		br := b.login(b.owner.Email)

		if r := br.postForm("/webhooks", url.Values{"url": {"ftp://example.com/hook"}}); r.status != http.StatusUnprocessableEntity ||
			!strings.Contains(r.body, `class="field-error"`) || shownSecret.MatchString(html.UnescapeString(r.body)) {
			t.Errorf("a bad URL: %d", r.status)
		}
		// The sandbox reaches loopback, not the private network or cloud metadata.
		for _, inside := range []string{"http://169.254.169.254/latest/meta-data", "http://10.255.255.53:53/x"} {
			if r := br.postForm("/webhooks", url.Values{"url": {inside}}); r.status != http.StatusUnprocessableEntity {
				t.Errorf("add %s in sandbox mode: %d, want 422", inside, r.status)
			}
		}
		addToken := regexp.MustCompile(`<form method="post" action="/webhooks">\s*<input type="hidden" name="request" value="([A-Z2-7]{26})"`).
			FindStringSubmatch(br.get("/webhooks").body)
		if addToken == nil {
			t.Fatal("the add form has no token")
		}
		addForm := url.Values{"url": {rc.URL + "/hook"}, "request": {addToken[1]}}
		add := br.postForm("/webhooks", addForm)
		secrets := shownSecret.FindAllString(html.UnescapeString(add.body), -1)
		if add.status != http.StatusCreated || len(secrets) != 1 || add.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("add: %d, secrets %v, Cache-Control %q", add.status, secrets, add.header.Get("Cache-Control"))
		}
		first := secrets[0]
		// The same form sent again (a reload) adds nothing and shows no
		// secret, but says so rather than "registered already".
		if again := br.postForm("/webhooks", addForm); again.status != http.StatusConflict || shownSecret.MatchString(html.UnescapeString(again.body)) ||
			!strings.Contains(again.body, "This endpoint was already added") || !strings.Contains(again.body, rc.URL+"/hook") {
			t.Fatalf("the add form sent again: %d\n%s", again.status, again.body)
		}
		list := br.get("/webhooks")
		ids := endpointIDs(list.body)
		if len(ids) != 1 || !strings.Contains(list.body, rc.URL+"/hook") {
			t.Fatalf("list: %v", ids)
		}
		id := ids[0]
		if r := br.postForm("/webhooks", url.Values{"url": {rc.URL + "/hook"}}); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "registered already") {
			t.Errorf("the same URL twice: %d", r.status)
		}

		// The test event leads to its answer on the page (post/redirect/
		// get): reloading that page shows the answer again, sending nothing.
		test := br.postForm("/webhooks/"+id+"/test", nil)
		shown := test.header.Get("Location")
		if test.status != http.StatusSeeOther || !strings.HasPrefix(shown, "/webhooks?test=") {
			t.Fatalf("test event: %d to %q; want 303 to the webhooks page", test.status, shown)
		}
		for range 2 {
			if r := br.get(shown); r.status != http.StatusOK || !strings.Contains(r.body, "Delivered: the endpoint answered HTTP 200") ||
				!strings.Contains(r.body, "thanks") || !strings.Contains(r.body, rc.URL+"/hook") {
				t.Errorf("the test event's answer: %d\n%s", r.status, r.body)
			}
		}
		if got := rc.waitFor(t, 1); got[0].header.Get("X-Service-Test") != "true" || !verifies(first, got[0]) {
			t.Errorf("test event request: %v", got[0].header)
		}
		if n := len(rc.requests()); n != 1 {
			t.Errorf("the receiver got %d test events; the reload sent one more", n)
		}
		// Another merchant's delivery id shows no answer.
		otherID, _ := b.s.NewMerchant(t)
		otherBr := b.login(b.addUser(otherID, "rival@example.com", "owner").Email)
		if r := otherBr.get(shown); r.status != http.StatusOK || strings.Contains(r.body, "thanks") || strings.Contains(r.body, "Test event answer") {
			t.Errorf("another merchant sees the test event's answer: %d", r.status)
		}
		down := newReceiver(t, func(_ int, w http.ResponseWriter) {
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("upstream down"))
		})
		br.postForm("/webhooks", url.Values{"url": {down.URL}})
		downID := ""
		for _, e := range endpointIDs(br.get("/webhooks").body) {
			if e != id {
				downID = e
			}
		}
		if r := br.get(br.postForm("/webhooks/"+downID+"/test", nil).header.Get("Location")); !strings.Contains(r.body, "Not delivered.") || !strings.Contains(r.body, "HTTP 502") || !strings.Contains(r.body, "upstream down") {
			t.Errorf("a failing test event's answer is not shown")
		}

		// Disable, enable.
		if r := br.postForm("/webhooks/"+downID+"/disable", nil); r.status != http.StatusSeeOther {
			t.Errorf("disable: %d", r.status)
		}
		if !strings.Contains(br.get("/webhooks").body, "Disabled") {
			t.Error("the endpoint is not shown disabled")
		}
		if r := br.postForm("/webhooks/"+downID+"/enable", nil); r.status != http.StatusSeeOther {
			t.Errorf("enable: %d", r.status)
		}

		// Rotate: a new secret, once; a delivery then verifies with both.
		token := regexp.MustCompile(`action="/webhooks/` + id + `/rotate" class="inline-form"><input type="hidden" name="request" value="([A-Z2-7]{26})"`).
			FindStringSubmatch(br.get("/webhooks").body)
		if token == nil {
			t.Fatal("the rotate form has no token")
		}
		if r := br.postForm("/webhooks/"+id+"/rotate", url.Values{"request": {strings.Repeat("A", 100<<10)}}); r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("an oversized rotate form: %d", r.status)
		}
		rot := br.postForm("/webhooks/"+id+"/rotate", url.Values{"request": {token[1]}})
		secrets = shownSecret.FindAllString(html.UnescapeString(rot.body), -1)
		if rot.status != http.StatusOK || len(secrets) != 1 || secrets[0] == first || rot.header.Get("Cache-Control") != "no-store" ||
			!strings.Contains(rot.body, "24 hours") {
			t.Fatalf("rotate: %d %v", rot.status, secrets)
		}
		second := secrets[0]
		// The same form sent again (a reload) rotates nothing: both
		// secrets stay valid (the delivery below), and none is shown.
		again := br.postForm("/webhooks/"+id+"/rotate", url.Values{"request": {token[1]}})
		if again.status != http.StatusConflict || shownSecret.MatchString(html.UnescapeString(again.body)) ||
			!strings.Contains(again.body, "This secret was already rotated") || !strings.Contains(again.body, "Previous secret valid until") ||
			!strings.Contains(again.body, "within 10 minutes of this rotation, that replaces only the secret you did not copy") {
			t.Fatalf("rotation sent again: %d\n%s", again.status, again.body)
		}
		if page := br.get("/webhooks"); !strings.Contains(page.body, "Previous secret valid until") {
			t.Error("the list does not say the old secret is still valid")
		}
		tx := createPayment(t, b, b.s.APIKey, "rotated-1", "AIRTEL", 1500)
		settleByPhone(t, br, tx["id"].(string), true)
		got := rc.waitFor(t, 2)
		if d := got[1]; !verifies(first, d) || !verifies(second, d) || len(strings.Fields(d.header.Get("webhook-signature"))) != 2 {
			t.Errorf("after rotation: old secret verifies %v, new %v, signatures %q", verifies(first, d), verifies(second, d), d.header.Get("webhook-signature"))
		}
		// Rotating again minutes later replaces the secret just made, and
		// the page says so: the first one keeps its validity.
		token = regexp.MustCompile(`action="/webhooks/` + id + `/rotate" class="inline-form"><input type="hidden" name="request" value="([A-Z2-7]{26})"`).
			FindStringSubmatch(br.get("/webhooks").body)
		if token == nil {
			t.Fatal("the rotate form has no token")
		}
		rot = br.postForm("/webhooks/"+id+"/rotate", url.Values{"request": {token[1]}})
		if rot.status != http.StatusOK || !strings.Contains(rot.body, "The secret made by the rotation a few minutes ago is replaced at once") ||
			strings.Contains(rot.body, "24 hours") || !strings.Contains(rot.body, "Previous secret valid until") {
			t.Fatalf("a second rotation minutes later: %d\n%s", rot.status, rot.body)
		}
		secrets = shownSecret.FindAllString(html.UnescapeString(rot.body), -1)
		tx = createPayment(t, b, b.s.APIKey, "rotated-2", "AIRTEL", 1500)
		settleByPhone(t, br, tx["id"].(string), true)
		got = rc.waitFor(t, 3)
		if d := got[2]; len(secrets) != 1 || !verifies(first, d) || verifies(second, d) || !verifies(secrets[0], d) {
			t.Errorf("after a second rotation minutes later: first verifies %v, second %v, third %v", verifies(first, d), verifies(second, d), len(secrets) == 1 && verifies(secrets[0], d))
		}

		// Delete: confirmation first.
		confirm := br.get("/webhooks/" + downID + "/delete")
		if confirm.status != http.StatusOK || !strings.Contains(confirm.body, `action="/webhooks/`+downID+`/delete"`) {
			t.Errorf("delete confirmation: %d", confirm.status)
		}
		if r := br.postForm("/webhooks/"+downID+"/delete", nil); r.status != http.StatusSeeOther {
			t.Errorf("delete: %d", r.status)
		}
		if ids := endpointIDs(br.get("/webhooks").body); len(ids) != 1 || ids[0] != id {
			t.Errorf("after delete: %v", ids)
		}
		// The back button's confirmation of the deleted endpoint says it
		// is deleted; to another merchant it is not found.
		if r := br.get("/webhooks/" + downID + "/delete"); r.status != http.StatusOK || !strings.Contains(r.body, "This endpoint is already deleted") ||
			!strings.Contains(r.body, `href="/webhooks"`) || strings.Contains(r.body, `action="/webhooks/`+downID+`/delete"`) {
			t.Errorf("the deleted endpoint's confirmation: %d\n%s", r.status, r.body)
		}
		if r := otherBr.get("/webhooks/" + downID + "/delete"); r.status != http.StatusNotFound {
			t.Errorf("another merchant's deleted endpoint: %d, want 404", r.status)
		}
		// A second delete (a double click) says the same, not 404.
		if r := br.postForm("/webhooks/"+downID+"/delete", nil); r.status != http.StatusOK || !strings.Contains(r.body, "This endpoint is already deleted") {
			t.Errorf("a second delete: %d", r.status)
		}
		if r := otherBr.postForm("/webhooks/"+downID+"/delete", nil); r.status != http.StatusNotFound {
			t.Errorf("another merchant's delete of it: %d, want 404", r.status)
		}

		// Secrets appear only in the answers that made them.
		for _, path := range []string{"/webhooks", "/audit", "/webhooks/deliveries", "/"} {
			if body := html.UnescapeString(br.get(path).body); strings.Contains(body, first) || strings.Contains(body, second) {
				t.Errorf("%s shows a secret", path)
			}
		}
		audit := br.get("/audit").body
		for _, action := range []string{"webhook.endpoint_added", "webhook.secret_rotated", "webhook.endpoint_deleted", "webhook.endpoint_disabled"} {
			if !strings.Contains(audit, action) {
				t.Errorf("the audit log lacks %s", action)
			}
		}

		// Past the bound of endpoints the form says so.
		for i := 0; ; i++ {
			if _, err := b.s.App.Webhooks.CreateEndpoint(context.Background(), b.s.MerchantID, fmt.Sprintf("%s/fill-%d", rc.URL, i)); err != nil {
				if !errors.Is(err, webhook.ErrTooManyEndpoints) {
					t.Fatal(err)
				}
				break
			}
		}
		want := fmt.Sprintf("An account has at most %d webhook endpoints: delete one you no longer use first.", webhook.MaxEndpoints)
		if r := br.postForm("/webhooks", url.Values{"url": {rc.URL + "/one-more"}}); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, want) {
			t.Errorf("one endpoint too many: %d\n%s", r.status, r.body)
		}
	})
}

// TestDeliveryHistoryPage: the history filters by state, event and
// endpoint and shows each attempt; one delivery is re-sent, then every
// undelivered one since a time, once however often it is asked.
func TestDeliveryHistoryPage(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		up := make(chan bool, 1)
		up <- false
		rc := newReceiver(t, func(_ int, w http.ResponseWriter) {
			ok := <-up
			up <- ok
			if !ok {
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte("maintenance"))
			}
		})
		setUp := func(ok bool) { <-up; up <- ok }
		b.addUser(b.s.MerchantID, "dev@example.com", "developer")
		br := b.login("dev@example.com")
		br.postForm("/webhooks", url.Values{"url": {rc.URL}})
		endpoint := endpointIDs(br.get("/webhooks").body)[0]

		var ids []string
		for i, confirm := range []bool{true, false, true} {
			id := createPayment(t, b, b.s.APIKey, "hist-"+string(rune('a'+i)), "AIRTEL", 1000)["id"].(string)
			settleByPhone(t, br, id, confirm)
			ids = append(ids, id)
		}
		rc.waitFor(t, 3) // every first attempt failed with 503
		// Wait for those attempts' outcomes to be written, so that no
		// attempt is in flight when the test marks them undelivered.
		deadline := time.Now().Add(60 * time.Second)
		for {
			ds, err := b.s.App.Webhooks.Deliveries(context.Background(), b.s.MerchantID, 0)
			if err != nil {
				t.Fatal(err)
			}
			done := len(ds) == 3
			for _, d := range ds {
				done = done && len(d.Attempts) == 1 && !d.Attempts[0].InProgress && d.NextAttemptAt != nil
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first attempts were not recorded")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Make them undelivered, as five failed attempts would.
		if _, err := b.s.App.DB.Exec(`UPDATE webhook_deliveries SET state = 'undelivered', next_attempt_at = NULL WHERE merchant_id = $1`, b.s.MerchantID); err != nil {
			t.Fatal(err)
		}

		// The overview counts them among what needs a person; another
		// merchant's overview does not.
		if home := br.get("/"); !strings.Contains(home.body, "3 webhook deliveries could not be delivered.") {
			t.Errorf("the overview does not count the 3 undelivered deliveries: %.3000s", home.body)
		}
		otherID, _ := b.s.NewMerchant(t)
		b.addUser(otherID, "owner@other.example", "owner")
		if home := b.login("owner@other.example").get("/"); home.status != http.StatusOK || strings.Contains(home.body, "could not be delivered") {
			t.Errorf("another merchant's overview counts these deliveries: %d %.3000s", home.status, home.body)
		}

		all := br.get("/webhooks/deliveries")
		if all.status != http.StatusOK || strings.Count(all.body, `class="delivery"`) != 3 || !strings.Contains(all.body, "HTTP 503") || !strings.Contains(all.body, "maintenance") {
			t.Fatalf("history: %d, %d deliveries", all.status, strings.Count(all.body, `class="delivery"`))
		}
		if strings.Contains(all.body, "Newest") {
			t.Error("the first page links to the newest")
		}
		// A later page leads back to the first, with the same filter.
		ds, _ := b.s.App.Webhooks.Deliveries(context.Background(), b.s.MerchantID, 0)
		later := br.get("/webhooks/deliveries?state=undelivered&after=" + ds[0].ID).body
		if !strings.Contains(later, `<a href="/webhooks/deliveries?state=undelivered">← Newest</a>`) {
			t.Errorf("a later page has no way back to the newest: %.3000s", later)
		}
		for query, want := range map[string]int{
			"state=undelivered":                       3,
			"state=delivered":                         0,
			"event=transaction.failed":                1,
			"event=transaction.success":               2,
			"endpoint=" + endpoint:                    3,
			"endpoint=" + endpoint + "&state=pending": 0,
			"endpoint=" + strings.ToUpper(endpoint):   3, // an id in any case, as the API reads ids
		} {
			if n := strings.Count(br.get("/webhooks/deliveries?"+query).body, `class="delivery"`); n != want {
				t.Errorf("%s: %d deliveries, want %d", query, n, want)
			}
		}
		for _, bad := range []string{"state=lost", "event=transaction.lost", "after=x", "show=everything"} {
			r := br.get("/webhooks/deliveries?" + bad)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, "Please correct the field below.") {
				t.Errorf("bad filter %s: %d", bad, r.status)
			}
			if err := errorsTiedToFields(r.body); err != nil {
				t.Errorf("bad filter %s: %v", bad, err)
			}
		}

		// Re-send one: still down, then up.
		deliveries, _ := b.s.App.Webhooks.Deliveries(context.Background(), b.s.MerchantID, 0)
		one := deliveries[0].ID
		back := "/webhooks/deliveries?state=undelivered"
		r := br.postForm("/webhooks/deliveries/"+one+"/resend", url.Values{"return": {back}})
		if r.status != http.StatusSeeOther || r.header.Get("Location") != back {
			t.Fatalf("re-send: %d %s", r.status, r.header.Get("Location"))
		}
		if page := br.get(back); !strings.Contains(page.body, "Re-sent, but not delivered: HTTP 503.") {
			t.Error("the failed re-send's answer is not shown")
		}
		setUp(true)
		br.postForm("/webhooks/deliveries/"+one+"/resend", url.Values{"return": {"//evil.example/"}})
		if page := br.get("/webhooks/deliveries"); !strings.Contains(page.body, "Re-sent: the endpoint answered HTTP 200.") {
			t.Error("the re-send's answer is not shown")
		}
		if r := br.postForm("/webhooks/deliveries/"+strings.ToUpper(one)+"/resend", nil); r.status != http.StatusSeeOther {
			t.Errorf("re-sending a delivered delivery, its id in capitals: %d", r.status)
		} else if page := br.get("/webhooks/deliveries"); !strings.Contains(page.body, "Not re-sent: this delivery was delivered already.") {
			t.Error("re-sending a delivered delivery is not refused with its reason")
		}
		br.headers["Accept-Language"] = "fr"
		br.postForm("/webhooks/deliveries/"+one+"/resend", nil)
		if page := br.get("/webhooks/deliveries"); !strings.Contains(page.body, "Non renvoyé\u00a0: cet envoi a déjà été livré.") {
			t.Error("the refusal is not in French on a French page")
		}
		delete(br.headers, "Accept-Language")

		// Every undelivered one since yesterday: the two left, once.
		since := time.Now().In(ndjamena).Add(-24 * time.Hour).Format("2006-01-02T15:04")
		sent := len(rc.requests())
		if r := br.postForm("/webhooks/resend-undelivered", url.Values{"since": {since}}); r.status != http.StatusSeeOther {
			t.Fatalf("re-send since: %d", r.status)
		}
		if page := br.get("/webhooks/deliveries"); !strings.Contains(page.body, "2 deliveries queued for re-sending.") {
			t.Error("the number queued is not shown")
		}
		// The endpoint's id in capitals, as ids are read anywhere else.
		if r := br.postForm("/webhooks/resend-undelivered", url.Values{"since": {since}, "endpoint": {strings.ToUpper(endpoint)}}); r.status != http.StatusSeeOther {
			t.Errorf("re-send since, one endpoint named in capitals: %d", r.status)
		}
		rc.waitFor(t, sent+2)
		deadline = time.Now().Add(60 * time.Second)
		for strings.Count(br.get("/webhooks/deliveries?state=delivered").body, `class="delivery"`) != 3 {
			if time.Now().After(deadline) {
				t.Fatal("the queued deliveries were not delivered")
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		if n := len(rc.requests()) - sent; n != 2 {
			t.Errorf("the re-send since made %d requests, want 2", n)
		}
		// A time that does not parse is a refused field: 422, the page
		// again with the reason under the field, as the other forms.
		if r := br.postForm("/webhooks/resend-undelivered", url.Values{"since": {"yesterday"}}); r.status != http.StatusUnprocessableEntity ||
			!strings.Contains(r.body, "Enter a date and time.") {
			t.Errorf("bad time: %d", r.status)
		} else if err := errorsTiedToFields(r.body); err != nil {
			t.Errorf("bad time: %v", err)
		}
		// One queued: said in the singular.
		if _, err := b.s.App.DB.Exec(`UPDATE webhook_deliveries SET state = 'undelivered' WHERE id = $1`, one); err != nil {
			t.Fatal(err)
		}
		br.postForm("/webhooks/resend-undelivered", url.Values{"since": {since}})
		if page := br.get("/webhooks/deliveries"); !strings.Contains(page.body, "1 delivery queued for re-sending.") {
			t.Error("one delivery queued is not said in the singular")
		}
		// None queued: in French, "aucun envoi", not "0 envois".
		br.headers["Accept-Language"] = "fr"
		br.postForm("/webhooks/resend-undelivered", url.Values{"since": {since}})
		if page := br.get("/webhooks/deliveries"); !strings.Contains(html.UnescapeString(page.body), "Aucun envoi mis en file d'attente pour être renvoyé.") {
			t.Error("no delivery queued is not said as French says it")
		}
		delete(br.headers, "Accept-Language")
		// A payment's page, its id in capitals.
		if r := br.get("/transactions/" + strings.ToUpper(ids[0])); r.status != http.StatusOK || !strings.Contains(r.body, ids[0]) {
			t.Errorf("a payment's page by its id in capitals: %d", r.status)
		}
		// A deleted endpoint's history stays readable, filtered by it too;
		// an endpoint that is not the merchant's is not found.
		if r := br.postForm("/webhooks/"+endpoint+"/delete", nil); r.status != http.StatusSeeOther {
			t.Fatalf("delete the endpoint: %d", r.status)
		}
		if r := br.get("/webhooks/deliveries?endpoint=" + endpoint); r.status != http.StatusOK || strings.Count(r.body, `class="delivery"`) != 3 ||
			!strings.Contains(r.body, `<option value="`+endpoint+`" selected>A deleted endpoint</option>`) {
			t.Errorf("the deleted endpoint's history: %d, %d deliveries", r.status, strings.Count(r.body, `class="delivery"`))
		}
		if r := br.get("/webhooks/deliveries?endpoint=" + uuid.NewString()); r.status != http.StatusNotFound {
			t.Errorf("the history of an endpoint that is not the merchant's: %d, want 404", r.status)
		}
		audit := b.login(b.owner.Email).get("/audit").body
		for _, action := range []string{"webhook.delivery_resent", "webhook.undelivered_resent"} {
			if !strings.Contains(audit, action) {
				t.Errorf("the audit log lacks %s", action)
			}
		}
	})
}

// TestOverviewAlertCountsWhatCanBeResent: the overview's "could not be
// delivered" count holds the undelivered deliveries a person can act on,
// not a failed test event nor the deliveries of a deleted endpoint, which
// no re-send could ever clear.
func TestOverviewAlertCountsWhatCanBeResent(t *testing.T) {
	eachEngine(t, func(t *testing.T, b *bundle) {
		rc := newReceiver(t, func(_ int, w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) })
		br := b.login(b.owner.Email)
		br.postForm("/webhooks", url.Values{"url": {rc.URL}})
		endpoint := endpointIDs(br.get("/webhooks").body)[0]
		br.postForm("/webhooks/"+endpoint+"/test", nil) // fails: an undelivered test delivery
		id := createPayment(t, b, b.s.APIKey, "alert-1", "AIRTEL", 1000)["id"].(string)
		settleByPhone(t, br, id, true)
		rc.waitFor(t, 2)
		deadline := time.Now().Add(60 * time.Second)
		for {
			ds, _ := b.s.App.Webhooks.Deliveries(context.Background(), b.s.MerchantID, 0)
			if len(ds) == 2 && len(ds[0].Attempts) == 1 && !ds[0].Attempts[0].InProgress && len(ds[1].Attempts) == 1 && !ds[1].Attempts[0].InProgress {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the attempts were not recorded")
			}
			time.Sleep(20 * time.Millisecond)
		}
		// As five failed attempts would.
		if _, err := b.s.App.DB.Exec(`UPDATE webhook_deliveries SET state = 'undelivered', next_attempt_at = NULL WHERE merchant_id = $1`, b.s.MerchantID); err != nil {
			t.Fatal(err)
		}
		if page := br.get("/").body; !strings.Contains(page, `<a href="/webhooks/deliveries?state=undelivered&amp;show=resendable">1 webhook delivery could not be delivered.`) {
			t.Error("the overview does not count the one payment delivery that can be re-sent (and only it)")
		}
		// The alert's list shows what it counts; the test event is in the
		// full history.
		for query, want := range map[string]int{"state=undelivered&show=resendable": 1, "state=undelivered": 2} {
			if n := strings.Count(br.get("/webhooks/deliveries?"+query).body, `class="delivery"`); n != want {
				t.Errorf("%s: %d deliveries, want %d", query, n, want)
			}
		}
		const resendForm = `/resend" class="inline-form"`
		if n := strings.Count(br.get("/webhooks/deliveries?state=undelivered").body, resendForm); n != 1 {
			t.Errorf("%d re-send buttons for one payment delivery and one test event, want 1", n)
		}
		if r := br.postForm("/webhooks/"+endpoint+"/delete", nil); r.status != http.StatusSeeOther {
			t.Fatalf("delete the endpoint: %d", r.status)
		}
		// No re-send button for a deleted endpoint's delivery either: the
		// re-send would be refused.
		if n := strings.Count(br.get("/webhooks/deliveries?state=undelivered").body, resendForm); n != 0 {
			t.Errorf("a deleted endpoint's deliveries offer %d re-send buttons, which are refused", n)
		}
		if page := br.get("/").body; !strings.Contains(page, "Nothing needs attention.") {
			t.Error("the deleted endpoint's undelivered delivery still needs attention, though nothing can re-send it")
		}
		if n := strings.Count(br.get("/webhooks/deliveries?state=undelivered&show=resendable").body, `class="delivery"`); n != 0 {
			t.Errorf("a deleted endpoint's deliveries are shown as re-sendable: %d", n)
		}
	})
}
