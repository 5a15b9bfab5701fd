package browsertest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/webhook"
)

// delivery is one request the receiver got.
type delivery struct {
	ID         string // webhook-id
	Timestamp  time.Time
	Signatures []string // the webhook-signature's space-separated "v1,..." values
	Body       []byte
	Event      string
	Data       map[string]any
}

// receiver is the merchant's webhook endpoint: a local HTTP server that
// records every delivery and answers with the status the test sets.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []delivery
	status int
	signal chan struct{}
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{status: http.StatusOK, signal: make(chan struct{}, 1)}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		d := delivery{ID: r.Header.Get("webhook-id"), Body: body, Signatures: strings.Fields(r.Header.Get("webhook-signature"))}
		if sec, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64); err == nil {
			d.Timestamp = time.Unix(sec, 0)
		}
		var env struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		if json.Unmarshal(body, &env) == nil {
			d.Event, d.Data = env.Event, env.Data
		}
		rc.mu.Lock()
		rc.got = append(rc.got, d)
		status := rc.status
		rc.mu.Unlock()
		select {
		case rc.signal <- struct{}{}:
		default:
		}
		w.WriteHeader(status)
		io.WriteString(w, `{"received":true}`)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// answer sets the status of the receiver's next answers.
func (rc *receiver) answer(status int) {
	rc.mu.Lock()
	rc.status = status
	rc.mu.Unlock()
}

// deliveries returns what arrived so far.
func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// await waits until a delivery arrives that match accepts, skipping the
// first `after` deliveries, and returns it.
func (rc *receiver) await(t testing.TB, after int, what string, match func(delivery) bool) delivery {
	t.Helper()
	deadline := time.After(stepTimeout)
	for {
		got := rc.deliveries()
		for _, d := range got[min(after, len(got)):] {
			if match(d) {
				return d
			}
		}
		select {
		case <-rc.signal:
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			var events []string
			for _, d := range got {
				events = append(events, d.Event+" "+d.ID)
			}
			t.Fatalf("the receiver never got %s; it got %d deliveries: %v", what, len(got), events)
		}
	}
}

// signedWith reports whether one of d's Standard Webhooks signatures is by
// secret.
func (d delivery) signedWith(t testing.TB, secret string) bool {
	t.Helper()
	want, err := webhook.StandardSignature(secret, d.ID, d.Timestamp, d.Body)
	if err != nil {
		t.Fatalf("sign with the endpoint's secret: %v", err)
	}
	for _, s := range d.Signatures {
		if s == want {
			return true
		}
	}
	return false
}
