package jobs

import (
	"context"
	"database/sql"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Sweeper is the backstop for payments a dead process was holding. When a
// process is killed, the River jobs it was running stay "running" until
// River's rescuer takes them back: that needs rescueAfter, a rescuer pass
// (every 30 s, not configurable) and a leader (up to ~20 s to replace when
// the dead process was the leader), so well over a minute in the worst
// case. Meanwhile a payment would stay PENDING past expires_at.
//
// So every process, leader or not, looks every few seconds for PENDING
// payments past expires_at and expires them directly through the same
// idempotent call the expiry worker uses. A duplicate with a live job or
// another instance's sweeper is harmless: Expire settles with one
// conditional UPDATE. The stuck River jobs are rescued later as usual and
// find nothing left to do. (A webhook attempt held by a dead process needs
// no sweeper: its delivery is due again once its lease is over, and every
// instance's webhook.Dispatcher looks for due deliveries.)
//
// The package that owns the payments finds the overdue ones (jobs imports
// no domain package: they import jobs).
type Sweeper struct {
	// OverduePayments lists up to limit PENDING payments whose expires_at
	// is before cutoff, oldest first (store.Transactions.Overdue).
	OverduePayments func(ctx context.Context, cutoff time.Time, limit int) ([]Ref, error)
	// Handlers are the domain calls that settle a payment, the same as
	// the workers'.
	Handlers *Handlers
	// Now is the service clock, the one that stamped expires_at and
	// next_attempt_at.
	Now    func() time.Time
	Logger *slog.Logger
}

// The sweeper's timing. A payment must not stay PENDING more than 30 s past
// expires_at. An expiry check normally lands within about a second of
// expires_at, so sweepGrace leaves the jobs their turn under load; then a
// pass comes within sweepEvery. Worst case after a kill: a payment is
// final sweepGrace + sweepEvery + one operator enquiry past expires_at
// (about 20 s).
const (
	sweepEvery = 5 * time.Second
	sweepGrace = 5 * time.Second
	// sweepBatch and sweepParallel bound what one pass takes on, so a
	// backlog after an outage is worked off over several passes instead
	// of flooding the operators or the database.
	sweepBatch    = 200
	sweepParallel = 20
)

// Start runs the sweeper in the background until stop is called or ctx
// ends; stop waits for the pass in progress to end.
func (s *Sweeper) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// Run sweeps every sweepEvery (with a little jitter, so that instances do
// not sweep in step) until ctx ends. The first pass is at once: a process
// restarted after a crash takes up what the dead one held right away.
func (s *Sweeper) Run(ctx context.Context) {
	for {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.Logger.Warn("sweep for overdue payments failed; will try again", "err", err)
		}
		jitter := time.Duration(rand.Int64N(int64(sweepEvery / 5)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(sweepEvery - sweepEvery/10 + jitter):
		}
	}
}

// Sweep makes one pass: it expires overdue PENDING payments, and reports
// how many it took on.
func (s *Sweeper) Sweep(ctx context.Context) (payments int, err error) {
	due, err := s.OverduePayments(ctx, s.Now().Add(-sweepGrace), sweepBatch)
	if err != nil {
		return 0, err
	}
	s.expire(ctx, due)
	if len(due) > 0 {
		s.Logger.Info("swept overdue payments an expiry check had not settled", "payments", len(due))
	}
	return len(due), nil
}

// Ref names one transaction of a merchant.
type Ref struct{ MerchantID, ID string }

// expire runs the expiry check of every ref, sweepParallel at a time, each
// bounded like the expiry job it stands in for, and waits for all of them.
// The delay Expire returns is dropped: the payment's row says what comes
// next, and its River job acts on it once rescued.
func (s *Sweeper) expire(ctx context.Context, refs []Ref) {
	sem := make(chan struct{}, sweepParallel)
	var wg sync.WaitGroup
	for _, r := range refs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(ctx, paymentJobTimeout)
			defer cancel()
			if _, err := s.Handlers.Payments.Expire(ctx, r.MerchantID, r.ID); err != nil && ctx.Err() == nil {
				s.Logger.Warn("sweep could not expire an overdue payment; will try again", "merchant_id", r.MerchantID, "id", r.ID, "err", err)
			}
		})
	}
	wg.Wait()
}

// CollectRefs reads (merchant_id, id) rows, as store.Transactions.Overdue
// selects them, and closes them.
func CollectRefs(rows *sql.Rows, err error) ([]Ref, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var refs []Ref
	for rows.Next() {
		var r Ref
		if err := rows.Scan(&r.MerchantID, &r.ID); err != nil {
			return nil, err
		}
		refs = append(refs, r)
	}
	return refs, rows.Err()
}
