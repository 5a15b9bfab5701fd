package dashboard

import (
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// TestURLReasons: each reason webhook.ValidateURL gives has its own key,
// and each key of urlReasons is still a reason it gives. The webhook
// package words its reasons in English with no other handle; a reworded
// one would fall back to the general key, and this test says which.
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
		{"https://example.com:99999/hook", false, "wh.url.port"},
		{"https://localhost/hook", true, "wh.url.localhost"},
		{"http://0x7f.1/hook", false, "wh.url.numeric"},
		{"https://10.0.0.1/hook", true, "wh.url.private.live"},
		{"http://10.0.0.1/hook", false, "wh.url.private"},
	}
	covered := map[string]bool{}
	for _, s := range samples {
		err := webhook.ValidateURL(s.url, s.live)
		if err == nil {
			t.Errorf("ValidateURL(%.40q, live %v) accepts it; the sample no longer shows %s", s.url, s.live, s.want)
			continue
		}
		refused := &payment.Error{Code: payment.EINVALID, Message: err.Error(), Fields: map[string]string{"url": err.Error()}}
		if got, _ := urlProblem(refused); got != s.want {
			t.Errorf("ValidateURL's %q is shown as %s, want %s: add it to urlReasons", err, got, s.want)
		}
		covered[err.Error()] = true
	}
	for reason := range urlReasons {
		if !covered[reason] {
			t.Errorf("urlReasons lists %q, which no sample makes ValidateURL say", reason)
		}
	}
	taken := &payment.Error{Code: payment.EUNPROCESSABLE, Fields: map[string]string{"url": "is registered already"}}
	if got, _ := urlProblem(taken); got != "wh.url.taken" {
		t.Errorf("a URL registered already is shown as %s", got)
	}
}
