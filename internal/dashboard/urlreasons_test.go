package dashboard

import (
	"errors"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// TestURLReasons: each reason webhook.ValidateURL refuses a URL for has its
// own key, found through the refusal that carries it as its Reason, and
// urlReasons lists no reason twice.
func TestURLReasons(t *testing.T) {
	samples := []struct {
		url  string
		live bool
		want string
	}{
		{"", false, "wh.url.required"},
		{"https://example.com/" + strings.Repeat("a", webhook.MaxURLLength), false, "wh.url.long"},
		{"http://[::1", false, "wh.url.bad"},
		{"http://example.com/hook", true, "wh.url.https"},
		{"ftp://example.com/hook", false, "wh.url.scheme"},
		{"http:///hook", false, "wh.url.host"},
		{"https://user:pw@example.com/hook", false, "wh.url.userinfo"},
		{"https://hooks.example.com/q?x=a b", false, "wh.url.space"},
		{"https://example.com:99999/hook", false, "wh.url.port"},
		{"https://localhost/hook", true, "wh.url.localhost"},
		{"http://0x7f.1/hook", false, "wh.url.numeric"},
		{"https://10.0.0.1/hook", true, "wh.url.private.live"},
		{"http://10.0.0.1/hook", false, "wh.url.private"},
	}
	if len(samples) != len(urlReasons) {
		t.Errorf("%d samples for %d reasons: give each reason a sample", len(samples), len(urlReasons))
	}
	for _, s := range samples {
		reason := webhook.ValidateURL(s.url, s.live)
		if reason == nil {
			t.Errorf("%.40q (live %v) is accepted; the sample no longer shows %s", s.url, s.live, s.want)
			continue
		}
		// As the webhook service refuses it (TestFormErrorsInFrench goes
		// through the service and the form).
		err := &payment.Error{Code: payment.EINVALID, Message: reason.Error(), Fields: map[string]string{"url": reason.Error()}, Reason: reason}
		if got, _ := urlProblem(err); got != s.want {
			t.Errorf("%.40q (live %v): %v is shown as %s, want %s", s.url, s.live, err, got, s.want)
		}
	}
	seen := map[error]bool{}
	for _, r := range urlReasons {
		if seen[r.reason] {
			t.Errorf("urlReasons lists %q twice", r.reason)
		}
		seen[r.reason] = true
	}
	taken := &payment.Error{Code: payment.EUNPROCESSABLE, Fields: map[string]string{"url": "is registered already"}}
	if got, _ := urlProblem(taken); got != "wh.url.taken" {
		t.Errorf("a URL registered already is shown as %s", got)
	}
	if got, _ := urlProblem(errors.New("the database is down")); got != "" {
		t.Errorf("an internal error is shown as %s", got)
	}
}
