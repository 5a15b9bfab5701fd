package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The sandbox payers the load uses (the README's sandbox table).
const (
	phoneCallback = "+23560000001" // SUCCESS about 2 s after creation (Airtel calls back)
	phoneRefuses  = "+23560000002" // FAILED about 2 s after creation
	phoneNoAnswer = "+23560000003" // TIMEOUT at expires_at
	phonePollOnly = "+23560000006" // SUCCESS found by a status enquiry
)

// api talks to one running momopay over keep-alive connections, as a
// merchant's server would: the closed loops each on a wire of their own,
// the rest (open loops, set-up) through net/http, at most conns*2
// connections at once.
type api struct {
	base   string
	client *http.Client
	wires  *wires
}

func newAPI(base string, conns int) (*api, error) {
	ws, err := newWires(base)
	if err != nil {
		return nil, err
	}
	t := &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, MaxConnsPerHost: conns * 2,
		IdleConnTimeout: time.Minute}
	return &api{base: base, client: &http.Client{Timeout: 30 * time.Second, Transport: t}, wires: ws}, nil
}

// close ends the api's connections.
func (a *api) close() {
	a.wires.close()
	a.client.CloseIdleConnections()
}

// doer sends one request and decodes a 2xx answer: an api, or a wire.
type doer interface {
	do(ctx context.Context, method, path, key string, body []byte, out any) (int, error)
}

// tx is the part of a transaction the harness reads.
type tx struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// do sends one request and decodes a 2xx answer into out (when not nil).
// The body is always read to its end so that the connection is reused.
func (a *api) do(ctx context.Context, method, path, key string, body []byte, out any) (int, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	return decodeAnswer(method, path, resp.StatusCode, data, out)
}

// decodeAnswer turns an answer read in full into do's result: a non-2xx
// status is an error quoting the start of the body, and a 2xx body is
// decoded into out (when not nil).
func decodeAnswer(method, path string, code int, data []byte, out any) (int, error) {
	if code/100 != 2 {
		return code, fmt.Errorf("%s %s: HTTP %d: %.200s", method, path, code, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return code, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return code, nil
}

// create asks for one payment through c; the reference is the API's
// idempotency key, so each call passes a fresh one.
func create(ctx context.Context, c doer, key, ref, operator, phone string) (tx, error) {
	body := fmt.Sprintf(`{"reference":%q,"amount":1500,"currency":"XAF","operator":%q,"phone_number":%q}`, ref, operator, phone)
	var t tx
	_, err := c.do(ctx, "POST", "/v1/transactions", key, []byte(body), &t)
	return t, err
}

// merchant is one merchant's API key and the transactions made with it.
type merchant struct {
	ID, Key string
}

// owned is a transaction id with the key that can read it.
type owned struct {
	id, key string
}

// sample is what a closed loop measured.
type sample struct {
	ok, errs int
	elapsed  time.Duration
	lat      []time.Duration
	firstErr string
}

func (s sample) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.ok) / s.elapsed.Seconds()
}

// closedLoop runs conns workers, each sending its next request as soon as
// the previous answered, until d has passed or maxOps requests were sent
// (0: no limit). do gets the worker's own connection, the worker and a
// global sequence number.
func closedLoop(ctx context.Context, a *api, conns int, d time.Duration, maxOps int, do func(ctx context.Context, c *wire, worker, seq int) error) sample {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// A wire's reads and writes end at this instant, which its request
	// may report (i/o timeout) a moment before ctx's timer fires.
	end, _ := ctx.Deadline()
	var seq atomic.Int64
	var mu sync.Mutex
	var s sample
	var wg sync.WaitGroup
	start := time.Now()
	for w := range conns {
		wg.Go(func() {
			c := a.wires.of(w)
			var lat []time.Duration
			var ok, errs int
			var firstErr string
			for ctx.Err() == nil {
				i := int(seq.Add(1)) - 1
				if maxOps > 0 && i >= maxOps {
					break
				}
				t0 := time.Now()
				err := do(ctx, c, w, i)
				if ctx.Err() != nil || !time.Now().Before(end) {
					break // cut short by the end of the run: not counted
				}
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				ok++
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			s.lat = append(s.lat, lat...)
			s.ok += ok
			s.errs += errs
			if s.firstErr == "" {
				s.firstErr = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	s.elapsed = time.Since(start)
	return s
}

// createLoad creates payments from ms for d with conns connections,
// round-robin over operators, and returns what was created. The payer
// confirms at once, so the payments settle within seconds (Airtel's by
// callback, Moov's at its first status enquiry) and leave no polls behind.
func createLoad(ctx context.Context, a *api, ms []merchant, operators []string, conns int, d time.Duration, maxOps int, tag string) (sample, []owned) {
	var mu sync.Mutex
	var made []owned
	s := closedLoop(ctx, a, conns, d, maxOps, func(ctx context.Context, c *wire, w, i int) error {
		m := ms[w%len(ms)]
		t, err := create(ctx, c, m.Key, fmt.Sprintf("%s-%d", tag, i), operators[i%len(operators)], phoneCallback)
		if err == nil {
			mu.Lock()
			made = append(made, owned{t.ID, m.Key})
			mu.Unlock()
		}
		return err
	})
	return s, made
}

// getLoad reads the transactions in ids, in a random order, for d.
func getLoad(ctx context.Context, a *api, ids []owned, conns int, d time.Duration) sample {
	return closedLoop(ctx, a, conns, d, 0, func(ctx context.Context, c *wire, w, i int) error {
		o := ids[rand.IntN(len(ids))]
		_, err := c.do(ctx, "GET", "/v1/transactions/"+o.id, o.key, nil, nil)
		return err
	})
}

// listFilters are the filter combinations the list load mixes: none, each
// filter alone, and both, as a dashboard or a reconciliation job asks.
var listFilters = []string{
	"",
	"status=SUCCESS",
	"operator=MOOV",
	"status=SUCCESS&operator=AIRTEL",
	"status=FAILED&operator=MOOV",
	"status=TIMEOUT&operator=AIRTEL",
}

// seedList creates n payments for m with conns connections: about 45%
// SUCCESS, 45% FAILED and 10% TIMEOUT once settled, half on each operator,
// so that every filter of listFilters matches thousands of rows.
func seedList(ctx context.Context, a *api, m merchant, conns, n int, tag string) sample {
	return closedLoop(ctx, a, conns, 30*time.Minute, n, func(ctx context.Context, c *wire, w, i int) error {
		phone := []string{phoneCallback, phoneRefuses, phoneCallback, phoneRefuses, phoneCallback,
			phoneRefuses, phoneCallback, phoneRefuses, phoneCallback, phoneNoAnswer}[i%10]
		// i/10 so that each payer gets both operators.
		_, err := create(ctx, c, m.Key, fmt.Sprintf("%s-%d", tag, i), []string{"AIRTEL", "MOOV"}[(i/10)%2], phone)
		return err
	})
}

type listPage struct {
	Pagination struct {
		Total      int `json:"total"`
		TotalPages int `json:"total_pages"`
	} `json:"pagination"`
}

// waitSettled waits until none of m's transactions is PENDING (the
// no-answer ones end at their expires_at), so that the list is measured
// without the seeding's background work; at most patience. It returns how
// many were still PENDING.
func waitSettled(ctx context.Context, a *api, m merchant, patience time.Duration) int {
	deadline := time.Now().Add(patience)
	for {
		var p listPage
		_, err := a.do(ctx, "GET", "/v1/transactions?status=PENDING&per_page=1", m.Key, nil, &p)
		if err == nil && p.Pagination.Total == 0 {
			return 0
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return max(p.Pagination.Total, 1)
		}
		time.Sleep(time.Second)
	}
}

// listLoad reads filtered list pages of m's transactions for d: a random
// filter from listFilters and a random page among all of that filter's
// pages, deep ones included. deep holds the latencies of the pages in the
// back half.
func listLoad(ctx context.Context, a *api, m merchant, conns int, d time.Duration) (all sample, deep []time.Duration, totals map[string]int, err error) {
	pages := make([]int, len(listFilters))
	totals = map[string]int{}
	for i, f := range listFilters {
		var p listPage
		if _, err := a.do(ctx, "GET", "/v1/transactions?"+f+"&page=1&per_page=50", m.Key, nil, &p); err != nil {
			return sample{}, nil, nil, err
		}
		pages[i] = max(p.Pagination.TotalPages, 1)
		totals[f] = p.Pagination.Total
	}
	var mu sync.Mutex
	all = closedLoop(ctx, a, conns, d, 0, func(ctx context.Context, c *wire, w, i int) error {
		f := rand.IntN(len(listFilters))
		page := 1 + rand.IntN(pages[f])
		t0 := time.Now()
		_, err := c.do(ctx, "GET", fmt.Sprintf("/v1/transactions?%s&page=%d&per_page=50", listFilters[f], page), m.Key, nil, nil)
		if err == nil && page > pages[f]/2 {
			mu.Lock()
			deep = append(deep, time.Since(t0))
			mu.Unlock()
		}
		return err
	})
	return all, deep, totals, nil
}

// openLoop calls do n times, the i-th at start + i/rate, each in its own
// goroutine (a slow answer does not delay the next), with at most inflight
// outstanding; a call that finds inflight reached is skipped and counted.
func openLoop(ctx context.Context, rate float64, n, inflight int, do func(ctx context.Context, i int)) (skipped int) {
	sem := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			wg.Wait()
			return skipped + n - i
		}
		select {
		case sem <- struct{}{}:
		default:
			skipped++ // inflight answers outstanding: the server fell behind the rate
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			do(ctx, i)
		})
	}
	wg.Wait()
	return skipped
}

// percentile is the nearest-rank percentile p (0 to 100) of ds, which it
// sorts; 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := int(p / 100 * float64(len(ds))) // ceil(p*n/100) - 1, below
	if float64(rank) < p/100*float64(len(ds)) {
		rank++
	}
	return ds[min(max(rank-1, 0), len(ds)-1)]
}

// errSummary is s's error count and first error, for a log line.
func errSummary(s sample) string {
	if s.errs == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d errors, first: %s)", s.errs, strings.TrimSpace(s.firstErr))
}
