package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
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
// alone, so one input the database refuses fails only its own caller.
type Batcher[In, Out any] struct {
	run func(ctx context.Context, in []In) ([]Out, error)
	max int

	mu      sync.Mutex
	queue   []*batchCall[In, Out]
	running bool
}

type batchCall[In, Out any] struct {
	in   In
	out  Out
	err  error
	done chan struct{}
}

// batchTimeout bounds one batch. Callers wait for their answer
// whatever their own context says: a write may have committed, and the
// caller must know.
const batchTimeout = 30 * time.Second

// NewBatcher returns a Batcher that runs at most max inputs per batch.
func NewBatcher[In, Out any](max int, run func(ctx context.Context, in []In) ([]Out, error)) *Batcher[In, Out] {
	return &Batcher[In, Out]{run: run, max: max}
}

// Do runs in, alone or with others' inputs, and returns its own answer.
func (b *Batcher[In, Out]) Do(in In) (Out, error) {
	c := &batchCall[In, Out]{in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := !b.running
	b.running = true
	b.mu.Unlock()
	if start {
		go b.loop()
	}
	<-c.done
	return c.out, c.err
}

// loop runs what is queued until the queue is empty, one batch at a
// time: one batch in flight per kind also keeps two batches from locking
// the same rows in opposite orders (two statements in flight were
// measured no faster).
func (b *Batcher[In, Out]) loop() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.running = false
			b.mu.Unlock()
			return
		}
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
	out, err := b.run(ctx, in)
	cancel()
	if err == nil && len(out) != len(in) {
		err = fmt.Errorf("store: a batch of %d answered %d", len(in), len(out))
	}
	if err != nil && len(calls) > 1 {
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
