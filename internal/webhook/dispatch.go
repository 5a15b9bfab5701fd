package webhook

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"
)

// The Dispatcher makes every pending delivery's automatic attempts, each
// when it is due. A delivery's row already holds all its schedule (state,
// next_attempt_at) and its claim (lease_until), so the row is the queue:
// nothing else is written to schedule an attempt, and whatever commits a
// delivery, or a failed attempt's next time, has scheduled it. Each
// instance's dispatcher reads the due deliveries that no attempt holds,
// oldest first, as many as it has free workers, and runs Attempt's logic
// on each; the claim inside it (a conditional update with a lease) decides
// which instance sends when two read the same delivery. An attempt held
// by a killed process is due again once its lease is over.
//
// Webhook attempts used to be River jobs: one job per attempt, fetched,
// snoozed between attempts and completed by River beside the delivery's
// own writes. That was a quarter of the database's time in a drain
// (docs/performance.md), and River's queue order gave no endpoint a
// bound: a dead endpoint with a backlog could take every worker, ten
// seconds at a time, and hold back every other merchant's webhooks.

// wakeChannel is the PostgreSQL notification channel on which a bulk
// re-send, which makes many deliveries due at once, tells every instance's
// dispatcher to look the moment it commits. A settlement sends nothing on
// it: it wakes its own process's dispatchers once it has committed
// (Service.Wake), and other instances find its deliveries at their next
// poll. A NOTIFY holds PostgreSQL's global notification lock from its
// transaction's commit until the commit is flushed, so settlements that
// each sent one committed one at a time.
const wakeChannel = "momopay_webhooks_due"

// Dispatching defaults.
const (
	// DefaultWorkers bounds the attempts one instance runs at once. They
	// mostly wait on receivers (up to 10 s each), so many cost little.
	DefaultWorkers = 100
	// DefaultPerEndpoint bounds the attempts one instance runs at once to
	// any one endpoint: the per-endpoint fairness. An endpoint that times
	// out holds at most this many workers; the others keep delivering
	// everybody else's events. A receiver answering in 50 ms still gets
	// 200 events a second from each instance.
	DefaultPerEndpoint = 10
	// DefaultPerMerchant bounds the attempts one instance runs at once for
	// any one merchant, whatever its number of endpoints: without it, ten
	// endpoints that never answer took all 100 workers at each retry wave
	// and held back every other merchant's events for seconds; with it,
	// 30 workers stay for the others. It is not lower because one
	// merchant's backlog to a fast receiver needs the concurrency: the
	// drain of 10,000 deliveries to one merchant's 20 endpoints ("go run
	// ./bench -only drain") went on PostgreSQL from about 3,400/s
	// unbounded to 3,000-3,500/s at 70, 2,300-2,600/s at 50 and
	// 2,000-2,200/s at 30; on SQLite from 4,260/s to 3,000-3,200/s at 70.
	DefaultPerMerchant = 70
	// dispatchPoll is how often an idle dispatcher looks for due
	// deliveries when nothing told it to: the bound on how late a retry
	// (its next_attempt_at passing), an attempt whose process died (its
	// lease ending) and, on SQLite, which has no notifications, a new
	// delivery start. An empty look is a short read of a partial index.
	dispatchPoll = 100 * time.Millisecond
	// lookCooldown is the least time between two looks. Under a backlog
	// every attempt that ends frees a worker and wakes the dispatcher;
	// looking each time would cost a query per delivery, so the workers
	// freed within the cooldown are filled by one query.
	lookCooldown = 5 * time.Millisecond
	// errorPause is how long this instance leaves alone a delivery whose
	// attempt ended in an error of its own (the database, not the
	// receiver, whose refusals follow the contract's schedule), and waits
	// after a look that failed, so that a failing database is not asked
	// again in a tight loop.
	errorPause = time.Second
)

// DispatchConfig tunes a Dispatcher; zero values take the defaults.
type DispatchConfig struct {
	Workers, PerEndpoint, PerMerchant int
	// Poll replaces dispatchPoll: tests use a long one to show that a
	// notification alone starts an attempt.
	Poll time.Duration
}

// Dispatcher runs the due attempts of every merchant's deliveries (see
// the top of this file). Start it once; Stop ends it.
type Dispatcher struct {
	s                                 *Service
	workers, perEndpoint, perMerchant int
	poll                              time.Duration
	log                               *slog.Logger
	wake                              chan struct{}

	mu sync.Mutex
	// running maps each delivery being attempted to its endpoint, and
	// byEndpoint and byMerchant count them.
	running    map[string]string
	byEndpoint map[string]int
	byMerchant map[string]int
	// paused holds deliveries whose attempt failed with an error until
	// the time given (errorPause).
	paused map[string]time.Time
	// errLogged and errQuiet keep an outage (a full disk, a database that
	// stopped) from logging one line per due delivery each errorPause:
	// one line a second, with how many were held back.
	errLogged time.Time
	errQuiet  int

	attempts       sync.WaitGroup
	stopLooking    context.CancelFunc
	cancelAttempts context.CancelFunc
	done           chan struct{}
}

// NewDispatcher returns a dispatcher of s's deliveries.
func (s *Service) NewDispatcher(cfg DispatchConfig) *Dispatcher {
	d := &Dispatcher{
		s: s, workers: cfg.Workers, perEndpoint: cfg.PerEndpoint, perMerchant: cfg.PerMerchant, poll: cfg.Poll, log: s.log,
		wake: make(chan struct{}, 1), done: make(chan struct{}), running: map[string]string{},
		byEndpoint: map[string]int{}, byMerchant: map[string]int{}, paused: map[string]time.Time{},
	}
	if d.workers <= 0 {
		d.workers = DefaultWorkers
	}
	if d.perEndpoint <= 0 {
		d.perEndpoint = DefaultPerEndpoint
	}
	if d.perMerchant <= 0 {
		d.perMerchant = DefaultPerMerchant
	}
	if d.poll <= 0 {
		d.poll = dispatchPoll
	}
	return d
}

// Start runs the dispatcher in the background until Stop (or ctx ends).
// Attempts run on a context of their own that only Stop cancels, so that
// a stopping instance lets the attempts it began finish.
func (d *Dispatcher) Start(ctx context.Context) {
	var looking, attempts context.Context
	looking, d.stopLooking = context.WithCancel(ctx)
	attempts, d.cancelAttempts = context.WithCancel(context.WithoutCancel(ctx))
	go d.s.db.Listen(looking, wakeChannel, "webhook dispatcher's listener (new deliveries wait for the next poll meanwhile)", d.log,
		func(up bool) {
			if up { // what was announced while nobody listened
				d.Wake()
			}
		},
		func(string) { d.Wake() })
	d.s.mu.Lock()
	if d.s.dispatchers == nil {
		d.s.dispatchers = map[*Dispatcher]struct{}{}
	}
	d.s.dispatchers[d] = struct{}{}
	d.s.mu.Unlock()
	go func() {
		defer close(d.done)
		defer func() {
			d.s.mu.Lock()
			delete(d.s.dispatchers, d)
			d.s.mu.Unlock()
		}()
		d.run(looking, attempts)
	}()
}

// Wake tells this process's running dispatchers that deliveries were just
// committed (a settlement's, see Enqueue), so that their first attempts
// start now rather than at the next poll.
func (s *Service) Wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for d := range s.dispatchers {
		d.Wake()
	}
}

// Stop stops taking deliveries and waits for the attempts running until
// ctx ends. Then it cancels them, each records itself as interrupted and
// gives its delivery back for the next instance, and returns ctx's error.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.stopLooking()
	<-d.done
	finished := make(chan struct{})
	go func() {
		d.attempts.Wait()
		close(finished)
	}()
	select {
	case <-finished:
		d.cancelAttempts()
		return nil
	case <-ctx.Done():
	}
	d.cancelAttempts()
	<-finished
	return ctx.Err()
}

// Stopped is closed once the dispatcher no longer takes deliveries.
func (d *Dispatcher) Stopped() <-chan struct{} { return d.done }

// Wake makes the dispatcher look for due deliveries now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default: // a look is already coming
	}
}

// run looks for due deliveries whenever woken (a notification, an attempt
// ending) and every poll, until ctx ends.
func (d *Dispatcher) run(ctx, attempts context.Context) {
	tick := time.NewTicker(d.poll)
	defer tick.Stop()
	var notBefore time.Time // the earliest next look
	for {
		if wait := time.Until(notBefore); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		notBefore = time.Now().Add(lookCooldown)
		again, err := d.dispatch(ctx, attempts)
		if err != nil && ctx.Err() == nil {
			d.log.Warn("looking for due webhook deliveries failed; will look again", "err", err)
			notBefore = time.Now().Add(errorPause) // not at every wake
			continue
		}
		if again {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-tick.C:
		}
	}
}

// dispatch starts attempts of due deliveries on the free workers, at most
// perEndpoint per endpoint and perMerchant per merchant, and says whether
// to look again at once: it filled every free worker, so more may be due,
// or it left out deliveries of an endpoint or merchant at its bound.
func (d *Dispatcher) dispatch(ctx, attempts context.Context) (again bool, err error) {
	d.mu.Lock()
	free := d.workers - len(d.running)
	now := time.Now()
	skip := slices.Collect(maps.Keys(d.running))
	for id, until := range d.paused {
		if now.After(until) {
			delete(d.paused, id)
		} else {
			skip = append(skip, id)
		}
	}
	var full, busy []string
	for e, n := range d.byEndpoint {
		if n >= d.perEndpoint {
			full = append(full, e)
		}
	}
	for m, n := range d.byMerchant {
		if n >= d.perMerchant {
			busy = append(busy, m)
		}
	}
	d.mu.Unlock()
	if free <= 0 {
		return false, nil // an attempt ending wakes us
	}
	due, err := d.s.due(ctx, free, d.perEndpoint, skip, full, busy)
	if err != nil {
		return false, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range due {
		if d.byEndpoint[t.endpointID] >= d.perEndpoint || d.byMerchant[t.merchantID] >= d.perMerchant {
			again = true
			continue
		}
		d.running[t.id] = t.endpointID
		d.byEndpoint[t.endpointID]++
		d.byMerchant[t.merchantID]++
		d.attempts.Add(1)
		go d.attempt(attempts, t)
	}
	return again || len(due) == free, nil
}

// attempt runs one delivery's attempt on a worker, bounded like the lease
// it claims, and frees the worker.
func (d *Dispatcher) attempt(ctx context.Context, t *target) {
	defer d.attempts.Done()
	bounded, cancel := context.WithTimeout(ctx, d.s.lease())
	_, err := d.s.attempt(bounded, t)
	cancel()
	failed := err != nil && ctx.Err() == nil // an error of ours, not Stop
	d.mu.Lock()
	delete(d.running, t.id)
	if d.byEndpoint[t.endpointID]--; d.byEndpoint[t.endpointID] <= 0 {
		delete(d.byEndpoint, t.endpointID)
	}
	if d.byMerchant[t.merchantID]--; d.byMerchant[t.merchantID] <= 0 {
		delete(d.byMerchant, t.merchantID)
	}
	logIt, quiet := false, 0
	if failed {
		now := time.Now()
		d.paused[t.id] = now.Add(errorPause)
		if logIt = now.Sub(d.errLogged) >= time.Second; logIt {
			d.errLogged, quiet, d.errQuiet = now, d.errQuiet, 0
		} else {
			d.errQuiet++
		}
	}
	d.mu.Unlock()
	if logIt {
		// The error may have come after the outcome was recorded (its
		// answer lost): the delivery is tried again only if it is still due.
		d.log.Warn("webhook attempt stopped by an error on our side; its delivery is tried again unless its outcome was recorded",
			"merchant_id", t.merchantID, "delivery_id", t.id, "err", err, "also_failed_since_last_line", quiet)
	}
	d.Wake()
}
