package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// sustained is what the sustained-rate scenario measured: whether the
// background work (status polls, the expiry check at expires_at) keeps up
// with a steady stream of payments, each read back once it should be final.
type sustained struct {
	sent, created, skipped int
	timeoutLate            []time.Duration // TIMEOUT: updated_at - expires_at
	pollOnly               []time.Duration // SUCCESS with the callback lost: updated_at - created_at
	callback               []time.Duration // SUCCESS by callback: updated_at - created_at
	createLat              []time.Duration
	pending                int            // still PENDING at the read-back, at least 5 s past expires_at
	wrong                  map[string]int // "payer final-status" not as the sandbox scripts it
}

// sustain creates payments at rate per second for d, round-robin over ms
// (45% never answered, 45% with the callback lost, 10% confirmed by
// callback: mostly polls and expiry checks, the background work), waits
// for the PENDING window ttl to end and reads every payment back.
func sustain(ctx context.Context, a *api, ms []merchant, rate float64, d, ttl time.Duration, tag string) (*sustained, error) {
	mix := []string{phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly, phoneNoAnswer,
		phonePollOnly, phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly, phoneCallback,
		phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly,
		phoneNoAnswer, phonePollOnly, phoneCallback}
	n := int(rate * d.Seconds())
	type pay struct {
		phone, key string
		t          tx
		ok         bool
	}
	pays := make([]pay, n)
	var mu sync.Mutex
	res := &sustained{sent: n, wrong: map[string]int{}}
	res.skipped = openLoop(ctx, rate, n, 256, func(ctx context.Context, i int) {
		p := &pays[i]
		p.phone, p.key = mix[i%len(mix)], ms[i%len(ms)].Key
		t0 := time.Now()
		t, err := create(ctx, a, p.key, fmt.Sprintf("%s-%d", tag, i), []string{"AIRTEL", "MOOV"}[i%2], p.phone)
		lat := time.Since(t0)
		if err != nil {
			return
		}
		p.t, p.ok = t, true
		mu.Lock()
		res.created++
		res.createLat = append(res.createLat, lat)
		mu.Unlock()
	})
	select {
	case <-time.After(ttl + 5*time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Read back until nothing is PENDING or patience runs out.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var todo []*pay
		for i := range pays {
			if p := &pays[i]; p.ok && p.t.Status == "PENDING" {
				todo = append(todo, p)
			}
		}
		if len(todo) == 0 || time.Now().After(deadline) {
			break
		}
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		for _, p := range todo {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				var t tx
				if code, err := a.do(ctx, "GET", "/v1/transactions/"+p.t.ID, p.key, nil, &t); err == nil && code == http.StatusOK {
					p.t = t
				}
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		time.Sleep(time.Second)
	}
	for _, p := range pays {
		switch {
		case !p.ok:
		case p.t.Status == "PENDING":
			res.pending++
		case p.phone == phoneNoAnswer && p.t.Status == "TIMEOUT":
			res.timeoutLate = append(res.timeoutLate, p.t.UpdatedAt.Sub(p.t.ExpiresAt))
		case p.phone == phonePollOnly && p.t.Status == "SUCCESS":
			res.pollOnly = append(res.pollOnly, p.t.UpdatedAt.Sub(p.t.CreatedAt))
		case p.phone == phoneCallback && p.t.Status == "SUCCESS":
			res.callback = append(res.callback, p.t.UpdatedAt.Sub(p.t.CreatedAt))
		default:
			res.wrong[p.phone+" "+p.t.Status]++
		}
	}
	return res, nil
}
