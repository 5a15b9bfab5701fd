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

	mu   sync.Mutex
	got  map[string][]receipt
	seen map[string]bool // delivery ids, so a redelivery is not counted twice
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
	r := &receiver{url: "http://" + ln.Addr().String(), got: map[string][]receipt{}, seen: map[string]bool{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *receiver) handle(w http.ResponseWriter, req *http.Request) {
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
	tag, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	id := req.Header.Get("X-Service-Delivery-Id")
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "" && r.seen[id] {
		return
	}
	r.seen[id] = true
	r.got[tag] = append(r.got[tag], receipt{at: at, txID: p.Data.ID, updatedAt: p.Data.UpdatedAt})
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
		_, err := a.create(ctx, m.Key, fmt.Sprintf("%s-%d", tag, i), "AIRTEL", phoneCallback)
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
	window             time.Duration // first receipt to last
}

func (d drainResult) rate() float64 {
	if d.window <= 0 || d.received < 2 {
		return 0
	}
	return float64(d.received-1) / d.window.Seconds()
}

// webhookDrain queues a burst of deliveries and measures how fast they
// arrive: m has endpoints receiver/tag/1..E, so each settled payment queues
// E deliveries in the same database transaction as its state change; n/E
// Airtel payments created as fast as conns connections allow settle by
// callback about 2 s later, within about a second of each other, and the
// deliveries pile up faster than they are sent. (Moov's would settle at
// status enquiries that compete with the burst itself: on SQLite they
// came up to 17 s late, spreading the burst out.) The rate is counted
// from the first receipt to the last.
func webhookDrain(ctx context.Context, a *api, rc *receiver, m merchant, endpoints, n, conns int, tag string) (drainResult, error) {
	payments := (n + endpoints - 1) / endpoints
	s, made := createLoad(ctx, a, []merchant{m}, []string{"AIRTEL"}, conns, 5*time.Minute, payments, tag)
	if s.errs > 0 {
		return drainResult{}, fmt.Errorf("creating the burst's payments:%s", errSummary(s))
	}
	res := drainResult{expected: len(made) * endpoints}
	got := rc.waitFor(ctx, tag, res.expected, 30*time.Second)
	res.received = len(got)
	if len(got) > 0 {
		first, last := got[0].at, got[0].at
		for _, r := range got {
			first, last = minTime(first, r.at), maxTime(last, r.at)
		}
		res.window = last.Sub(first)
	}
	return res, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
