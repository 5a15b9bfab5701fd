package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// receiver is the merchants' webhook endpoint: it verifies nothing (the
// signatures are the service's tests' business), answers 200 at once and
// records when each delivery arrived, by the first segment of its path.
type receiver struct {
	url string
	srv *http.Server

	mu    sync.Mutex
	got   map[string][]receipt
	seen  map[string]bool          // delivery ids, so a redelivery is not counted twice
	gates map[string]chan struct{} // tags whose deliveries wait to be answered (hold)
}

// receipt is one delivery as it arrived.
type receipt struct {
	at        time.Time
	txID      string
	updatedAt time.Time // data.updated_at: when the state changed
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + ln.Addr().String(), got: map[string][]receipt{}, seen: map[string]bool{},
		gates: map[string]chan struct{}{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
	tag, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	r.mu.Lock()
	gate := r.gates[tag]
	r.mu.Unlock()
	if gate != nil {
		<-gate
	}
	at := time.Now()
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	w.WriteHeader(http.StatusOK)
	var p struct {
		Data struct {
			ID        string    `json:"id"`
			UpdatedAt time.Time `json:"updated_at"`
		} `json:"data"`
	}
	json.Unmarshal(body, &p)
	id := req.Header.Get("X-Service-Delivery-Id")
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "" && r.seen[id] {
		return
	}
	r.seen[id] = true
	r.got[tag] = append(r.got[tag], receipt{at: at, txID: p.Data.ID, updatedAt: p.Data.UpdatedAt})
}

// hold keeps the deliveries under tag waiting, unanswered, until the
// returned release is called.
func (r *receiver) hold(tag string) (release func()) {
	g := make(chan struct{})
	r.mu.Lock()
	r.gates[tag] = g
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			delete(r.gates, tag)
			r.mu.Unlock()
			close(g)
		})
	}
}

// receipts returns a copy of what arrived under tag.
func (r *receiver) receipts(tag string) []receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receipt(nil), r.got[tag]...)
}

// waitFor waits until n deliveries arrived under tag, or none arrived for
// idle, or ctx ends; it returns what arrived.
func (r *receiver) waitFor(ctx context.Context, tag string, n int, idle time.Duration) []receipt {
	last, lastChange := -1, time.Now()
	for {
		got := r.receipts(tag)
		if len(got) >= n || ctx.Err() != nil {
			return got
		}
		if len(got) != last {
			last, lastChange = len(got), time.Now()
		} else if time.Since(lastChange) > idle {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (r *receiver) close() { r.srv.Close() }

// webhookLatency creates payments whose payer confirms by callback at rate
// per second for d, from m (whose one endpoint is the receiver's /tag/),
// and returns, for each delivery, its arrival minus the transaction's
// updated_at: how long a merchant waits to hear of a state change.
func webhookLatency(ctx context.Context, a *api, rc *receiver, m merchant, rate float64, d time.Duration, tag string) (lat []time.Duration, created, failed int, err error) {
	n := int(rate * d.Seconds())
	var mu sync.Mutex
	var firstErr error
	skipped := openLoop(ctx, rate, n, 256, func(ctx context.Context, i int) {
		_, err := create(ctx, a, m.Key, fmt.Sprintf("%s-%d", tag, i), "AIRTEL", phoneCallback)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			created++
			return
		}
		failed++
		if firstErr == nil {
			firstErr = fmt.Errorf("creates: %w", err)
		}
	})
	if skipped > 0 && firstErr == nil {
		firstErr = fmt.Errorf("%d creates not sent: 256 were already waiting for an answer", skipped)
	}
	failed += skipped
	for _, r := range rc.waitFor(ctx, tag, created, 30*time.Second) {
		lat = append(lat, r.at.Sub(r.updatedAt))
	}
	return lat, created, failed, firstErr
}

// drainResult is a webhook burst as the receiver saw it.
type drainResult struct {
	expected, received int
	window             time.Duration // release of the backlog to the last receipt
	queued             bool          // every payment settled (its deliveries queued) before the release
}

func (d drainResult) rate() float64 {
	if d.window <= 0 || d.received < 1 {
		return 0
	}
	return float64(d.received) / d.window.Seconds()
}

// drainHold bounds how long the receiver holds the first deliveries while
// the backlog builds up: the service gives up on an attempt after 10 s.
const drainHold = 8 * time.Second

// webhookDrain queues a backlog of deliveries and measures how fast it
// drains: m has endpoints receiver/tag/1..E, so each settled payment queues
// E deliveries in the same database transaction as its state change. The
// receiver holds every delivery unanswered while n/E Airtel payments are
// created and settle by callback about 2 s later (the service's webhook
// workers all wait on held attempts meanwhile, and the rest queue up);
// once the list API says every one is SUCCESS, or drainHold has passed,
// the receiver lets them through, and the rate is counted from that
// release to the last receipt. (Moov's payments would settle at status
// enquiries that compete with the burst itself.)
//
// atRelease is called as the backlog is released and the func it returns
// once the last delivery arrived (with -profile, a CPU profile of the drain
// alone).
func webhookDrain(ctx context.Context, a *api, rc *receiver, m merchant, endpoints, n, conns int, tag string, atRelease func() (done func())) (drainResult, error) {
	payments := (n + endpoints - 1) / endpoints
	release := rc.hold(tag)
	defer release()
	held := time.Now()
	s, made := createLoad(ctx, a, []merchant{m}, []string{"AIRTEL"}, conns, 5*time.Minute, payments, tag)
	if s.errs > 0 {
		return drainResult{}, fmt.Errorf("creating the burst's payments:%s", errSummary(s))
	}
	res := drainResult{expected: len(made) * endpoints}
	for time.Since(held) < drainHold && ctx.Err() == nil {
		var page struct {
			Pagination struct {
				Total int `json:"total"`
			} `json:"pagination"`
		}
		_, err := a.do(ctx, http.MethodGet, "/v1/transactions?status=SUCCESS&per_page=1", m.Key, nil, &page)
		if err == nil && page.Pagination.Total >= len(made) {
			res.queued = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	done := atRelease()
	start := time.Now()
	release()
	got := rc.waitFor(ctx, tag, res.expected, 30*time.Second)
	done()
	res.received = len(got)
	var last time.Time
	for _, r := range got {
		last = maxTime(last, r.at)
	}
	if res.received > 0 {
		res.window = last.Sub(start)
	}
	return res, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
