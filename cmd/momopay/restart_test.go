package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestRollingRestart runs two instances on one PostgreSQL database behind
// a round-robin balancer (the test's client), drives a steady load of
// creates and reads, and restarts one instance again and again with
// SIGTERM, as a deployment does. It checks the promise of a graceful stop:
//
//   - every instance exits 0, within its grace;
//   - no request fails, except connections refused (or reset) before the
//     server accepted them, which the balancer sends to the other instance;
//     a create sent again that way is answered 201, never 409, which proves
//     the first try was never taken;
//   - every payment created reaches its final state, and the merchant sees
//     it once: one webhook delivery per payment, whose event is the final
//     state (the same delivery may arrive twice, as Standard Webhooks
//     allows, but never two deliveries for one payment);
//   - no background job is lost (none discarded, none left running).
func TestRollingRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of load and restarts")
	}
	t.Parallel()
	const (
		ttl      = 6 * time.Second
		restarts = 3
		grace    = "20s"
	)
	dbURL := testdb.URL(t, "postgres")
	rc := newRecordingReceiver(t)
	args := []string{"--pending-ttl", ttl.String(), "--rate-limit", "0", "--shutdown-grace", grace}
	a := serve(t, dbURL, args...)
	key, merchant := demoCredentials(t, a)
	b := serve(t, dbURL, args...)
	webhookCreate(t, dbURL, merchant, rc.URL)
	lb := &balancer{t: t, key: key, urls: []string{a.url, b.url}, client: &http.Client{Timeout: 30 * time.Second}}

	// The load: workers create payments of every outcome and read each
	// back, until the restarts are over.
	phones := map[string]string{
		"+23560000001": "SUCCESS", "+23560000002": "FAILED", "+23560000003": "TIMEOUT", "+23560000006": "SUCCESS",
	}
	var phoneList []string
	for p := range phones {
		phoneList = append(phoneList, p)
	}
	var (
		mu      sync.Mutex
		created = map[string]string{} // id: phone
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	for w := range 3 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				phone := phoneList[(w+i)%len(phoneList)]
				id := lb.create(fmt.Sprintf("roll-%d-%d", w, i), phone)
				if id == "" {
					continue
				}
				mu.Lock()
				created[id] = phone
				mu.Unlock()
				lb.get(id)
				time.Sleep(50 * time.Millisecond)
			}
		})
	}

	// The restarts: SIGTERM instance a, which must drain and exit 0, then
	// start it again on the same address.
	addr := strings.TrimPrefix(a.url, "http://")
	for range restarts {
		time.Sleep(3 * time.Second)
		if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		done := make(chan error, 1)
		go func() { done <- a.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("exit after SIGTERM: %v", err)
			}
			t.Logf("instance stopped %s after SIGTERM", time.Since(sent).Round(time.Millisecond))
		case <-time.After(25 * time.Second):
			t.Fatalf("still running 25 s after SIGTERM")
		}
		a = start(t, exec.Command(binary, append([]string{"serve", "--addr", addr, "--db", dbURL}, args...)...))
	}
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d payments created, %d requests, %d sent again to the other instance (%d refused at connect, the others dropped before an answer)",
		len(created), lb.requests.Load(), lb.retried.Load(), lb.refused.Load())
	if len(created) < 50 {
		t.Errorf("only %d payments created: the load was too light to prove anything", len(created))
	}
	if lb.retried.Load() == 0 {
		t.Logf("no request met a stopped instance this time")
	}

	// Every payment ends in its state.
	final := map[string]string{}
	deadline := time.Now().Add(ttl + 45*time.Second)
	for id, phone := range created {
		for {
			status := lb.get(id)
			if status != "PENDING" && status != "" {
				final[id] = status
				if status != phones[phone] {
					t.Errorf("payment %s (%s) is %s, want %s", id, phone, status, phones[phone])
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("payment %s (%s) still %s", id, phone, status)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Each once to the merchant: one delivery per payment, of its final
	// state. A delivery cut off by a stop is tried again after 1 min.
	deadline = time.Now().Add(90 * time.Second)
	for {
		missing := rc.check(t, final, false)
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			rc.check(t, final, true)
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// With a grace longer than any attempt, no attempt in flight at a stop
	// is cut off, so none had to be made again.
	if n := rc.repeats(); n > 0 {
		t.Errorf("%d of %d webhook deliveries arrived more than once: attempts in flight at a stop were cut off", n, rc.deliveries())
	}

	// No job lost: none discarded, none left held by a stopped instance.
	db, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// (The last attempts may still be waiting on the receiver's answer.)
	var discarded, running int
	for end := time.Now().Add(10 * time.Second); ; {
		if err := db.QueryRow(`SELECT count(*) FILTER (WHERE state = 'discarded'), count(*) FILTER (WHERE state = 'running') FROM river_job`).Scan(&discarded, &running); err != nil {
			t.Fatal(err)
		}
		if running == 0 || time.Now().After(end) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if discarded > 0 || running > 0 {
		t.Errorf("jobs: %d discarded, %d still running after the load", discarded, running)
	}
}

// balancer sends each request to the next instance in turn and, when the
// connection is refused or dropped before an answer, to the other one, as
// a load balancer does with an instance that is stopping.
type balancer struct {
	t        *testing.T
	key      string
	urls     []string
	client   *http.Client
	next     atomic.Int64
	requests atomic.Int64
	retried  atomic.Int64 // sent again after a transport error
	refused  atomic.Int64 // of which the connection was refused
}

// do sends a request, moving on to the other instance after a transport
// error; it returns the answer and whether it was sent more than once.
func (lb *balancer) do(method, path, body string) (int, map[string]any, bool) {
	start := int(lb.next.Add(1))
	var lastErr error
	for try := range 6 {
		base := lb.urls[(start+try)%len(lb.urls)]
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+lb.key)
		req.Header.Set("Content-Type", "application/json")
		lb.requests.Add(1)
		resp, err := lb.client.Do(req)
		if err != nil {
			if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
				lb.refused.Add(1)
			}
			if !beforeAcceptance(err) {
				lb.t.Errorf("%s %s: %v", method, path, err)
				return 0, nil, false
			}
			lastErr = err
			lb.retried.Add(1)
			if try%len(lb.urls) == len(lb.urls)-1 {
				time.Sleep(100 * time.Millisecond) // both refused: one is starting
			}
			continue
		}
		var out map[string]any
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		json.Unmarshal(raw, &out)
		return resp.StatusCode, out, try > 0
	}
	lb.t.Errorf("%s %s: no instance took it: %v", method, path, lastErr)
	return 0, nil, false
}

// beforeAcceptance: the connection was refused, or closed or reset with
// nothing answered; the request tells which (a retried create answered 409
// had been taken after all).
func beforeAcceptance(err error) bool {
	var op *net.OpError
	var uerr *url.Error
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		(errors.As(err, &uerr) && strings.Contains(uerr.Err.Error(), "server closed"))
}

func (lb *balancer) create(ref, phone string) string {
	body := fmt.Sprintf(`{"reference":%q,"amount":700,"currency":"XAF","operator":"AIRTEL","phone_number":%q}`, ref, phone)
	status, out, again := lb.do("POST", "/v1/transactions", body)
	if status != http.StatusCreated {
		if status == http.StatusConflict && again {
			lb.t.Errorf("create %s: sent again after a dropped connection and answered 409: the first try had been accepted and its answer lost", ref)
		} else if status != 0 {
			lb.t.Errorf("create %s: %d %v", ref, status, out)
		}
		return ""
	}
	id, _ := out["id"].(string)
	return id
}

func (lb *balancer) get(id string) string {
	status, out, _ := lb.do("GET", "/v1/transactions/"+id, "")
	if status != http.StatusOK {
		if status != 0 {
			lb.t.Errorf("get %s: %d %v", id, status, out)
		}
		return ""
	}
	s, _ := out["status"].(string)
	return s
}

// recordingReceiver is a merchant's webhook endpoint that answers 200 and
// keeps, per transaction, the deliveries it got.
type recordingReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	byTx  map[string]map[string]string // transaction id: delivery id: event
	count map[string]int               // delivery id: arrivals
}

func newRecordingReceiver(t *testing.T) *recordingReceiver {
	rc := &recordingReceiver{byTx: map[string]map[string]string{}, count: map[string]int{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Event string `json:"event"`
			Data  struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		json.NewDecoder(r.Body).Decode(&ev)
		// A receiver that takes its time: a stop always finds attempts in
		// flight, which must finish rather than be cut off and retried.
		// River fetches webhook attempts every second: holding each longer
		// keeps some in flight at any moment.
		time.Sleep(1200 * time.Millisecond)
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		if rc.byTx[ev.Data.ID] == nil {
			rc.byTx[ev.Data.ID] = map[string]string{}
		}
		rc.byTx[ev.Data.ID][id] = ev.Event
		rc.count[id]++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// check compares the deliveries with the payments' final states: it reports
// (always) a payment with two deliveries or the wrong event, and (when
// report is set) one still without its delivery; it returns how many lack one.
func (rc *recordingReceiver) check(t *testing.T, final map[string]string, report bool) (missing int) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, status := range final {
		got := rc.byTx[id]
		switch {
		case len(got) == 0:
			missing++
			if report {
				t.Errorf("payment %s (%s): no webhook delivery", id, status)
			}
		case len(got) > 1:
			t.Fatalf("payment %s (%s): %d different deliveries %v: the merchant sees it twice", id, status, len(got), got)
		default:
			for _, event := range got {
				if event != "transaction."+strings.ToLower(status) {
					t.Fatalf("payment %s is %s, its webhook says %s", id, status, event)
				}
			}
		}
	}
	return missing
}

func (rc *recordingReceiver) deliveries() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.count)
}

func (rc *recordingReceiver) repeats() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, c := range rc.count {
		if c > 1 {
			n++
		}
	}
	return n
}
