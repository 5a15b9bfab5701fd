package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Batcher runs many callers' small writes of one kind together, where
// each one's cost is mostly not its rows: on PostgreSQL its round trip and
// its commit (a hundred webhook workers each claiming one delivery make a
// hundred round trips, where one statement over arrays claims them all),
// on SQLite its commit and its turn at the one writer (one transaction
// then runs them all).
//
// It adds no waiting window. A caller that finds the batcher idle runs at
// once, alone; callers that arrive while a batch is running queue, and
// the next batch takes them all (up to max). So batches grow only when
// the database is the bottleneck, and an idle service answers as fast as
// with single statements (group commit, as databases do it for their own
// log).
//
// run must answer for every input, in order, and commit or roll back as a
// whole. When it fails for a batch of several, each input is run again
// alone, so one input the database refuses fails only its own caller;
// unless the error is a *batchWideError, which every caller gets as is.
type Batcher[In, Out any] struct {
	run func(ctx context.Context, in []In) ([]Out, error)
	max int

	mu      sync.Mutex
	queue   []*batchCall[In, Out]
	running bool
	// taken is how many callers the batch in flight answers.
	taken int
}

type batchCall[In, Out any] struct {
	ctx  context.Context
	in   In
	out  Out
	err  error
	done chan struct{}
}

// batchTimeout bounds one batch. Once its batch has a connection, callers
// wait for their answer whatever their own context says: a write may have
// committed, and the caller must know.
const batchTimeout = 30 * time.Second

// NewBatcher returns a Batcher that runs at most max inputs per batch.
func NewBatcher[In, Out any](max int, run func(ctx context.Context, in []In) ([]Out, error)) *Batcher[In, Out] {
	return &Batcher[In, Out]{run: run, max: max}
}

// Do runs in, alone or with others' inputs, and returns its own answer.
//
// ctx bounds the wait before anything is written: in the queue, and for
// the connection its batch runs on (connWait), which on SQLite is the one
// writer, queued for by every job worker while another process holds the
// write lock. A caller whose ctx ends there gets ctx's error, having
// written nothing. Before, the wait for the writer ran to batchTimeout, so
// an API request's answer came after the server's write timeout had cut
// its connection.
func (b *Batcher[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	c := &batchCall[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.loop()
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		b.mu.Lock()
		i := slices.Index(b.queue, c)
		if i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
		}
		b.mu.Unlock()
		if i >= 0 {
			var zero Out
			return zero, ctx.Err()
		}
		<-c.done // taken by a batch: its answer says what was written
	}
	return c.out, c.err
}

// loop runs what is queued until the queue is empty, one batch at a
// time: one batch in flight per kind also keeps two batches from locking
// the same rows in opposite orders (two statements in flight were
// measured no faster).
func (b *Batcher[In, Out]) loop() {
	for {
		b.mu.Lock()
		b.taken = 0 // the previous batch has answered
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.taken = n
		calls := slices.Clone(b.queue[:n])
		clear(b.queue[:n]) // the queue's array keeps no finished call alive
		b.queue = b.queue[n:]
		b.mu.Unlock()
		b.runCalls(calls)
	}
}

func (b *Batcher[In, Out]) runCalls(calls []*batchCall[In, Out]) {
	in := make([]In, len(calls))
	for i, c := range calls {
		in[i] = c.in
	}
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	wait, gone := callersWait(ctx, calls)
	out, err := b.run(withConnWait(ctx, wait), in)
	if gone() && errors.Is(err, context.Canceled) {
		// Every caller gave up while the batch waited for a connection:
		// nothing was written, and each gets its own context's error.
		for _, c := range calls {
			c.err = c.ctx.Err()
			close(c.done)
		}
		cancel()
		return
	}
	cancel()
	if err == nil && len(out) != len(in) {
		err = fmt.Errorf("store: a batch of %d answered %d", len(in), len(out))
	}
	if wide, ok := errors.AsType[*batchWideError](err); ok {
		err = wide.err
	} else if err != nil && len(calls) > 1 {
		for _, c := range calls {
			b.runCalls([]*batchCall[In, Out]{c})
		}
		return
	}
	for i, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.out = out[i]
		}
		close(c.done)
	}
}

// callersWait is the context a batch waits for its connection under: done
// when every caller's own context is (gone then reports true), or with
// ctx.
func callersWait[In, Out any](ctx context.Context, calls []*batchCall[In, Out]) (wait context.Context, gone func() bool) {
	wait, cancel := context.WithCancel(ctx)
	left := int32(len(calls))
	var allGone atomic.Bool
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if atomic.AddInt32(&left, -1) == 0 {
				allGone.Store(true)
				cancel()
			}
		})
	}
	return wait, func() bool {
		for _, stop := range stops {
			stop()
		}
		cancel()
		return allGone.Load()
	}
}

// connWaitKey carries, in a batch's context, the context its transaction's
// connection is waited for under (InTx).
type connWaitKey struct{}

func withConnWait(ctx, wait context.Context) context.Context {
	return context.WithValue(ctx, connWaitKey{}, wait)
}

// connWait is the context to wait for a connection under: a batch's
// callers' (callersWait), or ctx itself.
func connWait(ctx context.Context) context.Context {
	if wait, ok := ctx.Value(connWaitKey{}).(context.Context); ok {
		return wait
	}
	return ctx
}

// batchWideError is a batch's failure that no input caused (BEGIN or
// COMMIT refused: SQLite's write lock held elsewhere past the busy
// timeout, say). Running each input again alone would meet it once per
// input, each time after that timeout; every caller gets it at once.
type batchWideError struct{ err error }

func (e *batchWideError) Error() string { return e.err.Error() }
func (e *batchWideError) Unwrap() error { return e.err }

// outcome is one input's answer from a batch of writes that may be
// refused (writesInTx): what it wrote, or why it was refused.
type outcome[Out any] struct {
	out Out
	err error
}

// EachInTx is a Batcher's run for writes of one kind on SQLite, where
// every write waits for the one writer and a commit's cost is mostly the
// WAL frames of the pages it changed, which writes of one kind share (the
// tails of tables and indexes, a day's totals): one transaction runs one
// for each input, in order, and commits them together.
//
// When one fails, the batch rolls back, and the Batcher runs each input
// again alone, so a batch never commits part of a write and one failing
// write fails only its own caller. When the transaction itself fails
// (BEGIN or COMMIT), the error is batch-wide (batchWideError).
func EachInTx[In, Out any](db *DB, one func(context.Context, *sql.Tx, In) (Out, error)) func(context.Context, []In) ([]Out, error) {
	return func(ctx context.Context, in []In) ([]Out, error) {
		outs := make([]Out, len(in))
		inputFailed := false
		err := db.InTx(ctx, func(tx *sql.Tx) error {
			for i, x := range in {
				var err error
				if outs[i], err = one(ctx, tx, x); err != nil {
					inputFailed = true
					return err
				}
			}
			return nil
		})
		if err != nil && !inputFailed {
			err = &batchWideError{err}
		}
		return outs, err
	}
}

// writesInTx is EachInTx for writes that may be refused: an error for
// which refused says true answers its own input only, and the others
// commit. one must have written nothing when it returns such an error.
func writesInTx[In, Out any](db *DB, one func(context.Context, *sql.Tx, In) (Out, error), refused func(error) bool) func(context.Context, []In) ([]outcome[Out], error) {
	return EachInTx(db, func(ctx context.Context, tx *sql.Tx, x In) (outcome[Out], error) {
		out, err := one(ctx, tx, x)
		if err != nil && refused(err) {
			return outcome[Out]{out, err}, nil
		}
		return outcome[Out]{out: out}, err
	})
}

// write runs in through b (a Batcher of writesInTx) and returns its own
// answer.
func write[In, Out any](ctx context.Context, b *Batcher[In, outcome[Out]], in In) (Out, error) {
	o, err := b.Do(ctx, in)
	if err != nil {
		return o.out, err
	}
	return o.out, o.err
}
