package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// recorder is a batched statement that doubles its inputs, remembers each
// batch it was given and can be held inside a run.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	hold    chan struct{} // when set, the next run waits on it
	started chan struct{} // closed when a held run has begun
	refuse  int           // an input whose batch fails
}

func (r *recorder) run(_ context.Context, in []int) ([]int, error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(in))
	hold := r.hold
	r.hold = nil
	r.mu.Unlock()
	if hold != nil {
		close(r.started)
		<-hold
	}
	if slices.Contains(in, r.refuse) {
		return nil, fmt.Errorf("refused %d", r.refuse)
	}
	out := make([]int, len(in))
	for i, x := range in {
		out[i] = 2 * x
	}
	return out, nil
}

// queued waits until b has n callers waiting for the next statement.
func queued[In, Out any](t *testing.T, b *Batcher[In, Out], n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		got := len(b.queue)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers queued, want %d", got, n)
		}
	}
}

// TestBatcherJoinsCallersThatWait: a caller alone runs at once, by itself;
// callers arriving while a statement runs share the next one, up to max
// per statement; each gets the answer to its own input.
func TestBatcherJoinsCallersThatWait(t *testing.T) {
	release := make(chan struct{})
	r := &recorder{hold: release, started: make(chan struct{}), refuse: -1}
	b := NewBatcher(4, r.run)

	answers := make([]int, 7)
	var wg sync.WaitGroup
	wg.Go(func() { answers[0], _ = b.Do(0) })
	<-r.started // the first statement runs, alone, and is held
	for i := 1; i < len(answers); i++ {
		wg.Go(func() {
			out, err := b.Do(i)
			if err != nil {
				t.Error(err)
			}
			answers[i] = out
		})
	}
	queued(t, b, len(answers)-1)
	close(release)
	wg.Wait()

	for i, got := range answers {
		if got != 2*i {
			t.Errorf("caller %d got %d, want %d", i, got, 2*i)
		}
	}
	sizes := []int{}
	for _, batch := range r.batches {
		sizes = append(sizes, len(batch))
	}
	if !slices.Equal(sizes, []int{1, 4, 2}) {
		t.Errorf("statements of %v inputs, want [1 4 2]: one alone, then the six that waited, four at most per statement", sizes)
	}

	// Idle again: the next caller runs at once, alone.
	if got, err := b.Do(21); got != 42 || err != nil || len(r.batches[len(r.batches)-1]) != 1 {
		t.Errorf("an idle batcher answered %d, %v after a batch of %d", got, err, len(r.batches[len(r.batches)-1]))
	}
}

// TestBatcherIsolatesARefusedInput: when a batch's statement fails, its
// inputs are run again one by one, so only the caller whose input the
// database refuses gets the error.
func TestBatcherIsolatesARefusedInput(t *testing.T) {
	release := make(chan struct{})
	r := &recorder{hold: release, started: make(chan struct{}), refuse: 3}
	b := NewBatcher(10, r.run)
	var wg sync.WaitGroup
	wg.Go(func() { b.Do(0) })
	<-r.started
	errs := make([]error, 5)
	outs := make([]int, 5)
	for i := 1; i < len(errs); i++ {
		wg.Go(func() { outs[i], errs[i] = b.Do(i) })
	}
	queued(t, b, len(errs)-1)
	close(release)
	wg.Wait()
	for i := 1; i < len(errs); i++ {
		switch {
		case i == 3 && (errs[i] == nil || errs[i].Error() != "refused 3"):
			t.Errorf("the refused input got %v, want its own error", errs[i])
		case i != 3 && (errs[i] != nil || outs[i] != 2*i):
			t.Errorf("input %d got %d, %v; want %d: another input's refusal is not its failure", i, outs[i], errs[i], 2*i)
		}
	}
}

// TestBatcherRefusesAShortAnswer: a statement that answers fewer inputs
// than it was given fails its callers rather than leave one without an
// answer.
func TestBatcherRefusesAShortAnswer(t *testing.T) {
	b := NewBatcher(10, func(_ context.Context, in []int) ([]int, error) { return nil, nil })
	if _, err := b.Do(1); err == nil {
		t.Fatal("a batch answered with nothing was taken as an answer")
	}
	want := errors.New("database down")
	b = NewBatcher(10, func(_ context.Context, in []int) ([]int, error) { return nil, want })
	if _, err := b.Do(1); !errors.Is(err, want) {
		t.Fatalf("got %v, want the statement's error", err)
	}
}
