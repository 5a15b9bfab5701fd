package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testdb"
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
	wg.Go(func() { answers[0], _ = b.Do(t.Context(), 0) })
	<-r.started // the first statement runs, alone, and is held
	for i := 1; i < len(answers); i++ {
		wg.Go(func() {
			out, err := b.Do(t.Context(), i)
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
	if got, err := b.Do(t.Context(), 21); got != 42 || err != nil || len(r.batches[len(r.batches)-1]) != 1 {
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
	wg.Go(func() { b.Do(t.Context(), 0) })
	<-r.started
	errs := make([]error, 5)
	outs := make([]int, 5)
	for i := 1; i < len(errs); i++ {
		wg.Go(func() { outs[i], errs[i] = b.Do(t.Context(), i) })
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
	if _, err := b.Do(t.Context(), 1); err == nil {
		t.Fatal("a batch answered with nothing was taken as an answer")
	}
	want := errors.New("database down")
	b = NewBatcher(10, func(_ context.Context, in []int) ([]int, error) { return nil, want })
	if _, err := b.Do(t.Context(), 1); !errors.Is(err, want) {
		t.Fatalf("got %v, want the statement's error", err)
	}
}

// TestBatcherBatchWideFailure: a batch that fails for no input's sake
// (BEGIN or COMMIT refused) answers every caller with the error at once,
// instead of being run again once per input: on SQLite each run would
// first wait out the busy timeout.
func TestBatcherBatchWideFailure(t *testing.T) {
	release := make(chan struct{})
	r := &recorder{hold: release, started: make(chan struct{}), refuse: -1}
	busy := errors.New("database is locked (5) (SQLITE_BUSY)")
	wide := func(ctx context.Context, in []int) ([]int, error) {
		r.run(ctx, in)
		return nil, &batchWideError{busy}
	}
	b := NewBatcher(10, wide)
	var wg sync.WaitGroup
	wg.Go(func() { b.Do(t.Context(), 0) })
	<-r.started
	errs := make([]error, 5)
	for i := 1; i < len(errs); i++ {
		wg.Go(func() { _, errs[i] = b.Do(t.Context(), i) })
	}
	queued(t, b, len(errs)-1)
	close(release)
	wg.Wait()
	for i := 1; i < len(errs); i++ {
		if errs[i] != busy {
			t.Errorf("input %d got %v, want the batch's error itself", i, errs[i])
		}
	}
	if len(r.batches) != 2 {
		t.Fatalf("runs %v, want two: the first input alone, then the others once", r.batches)
	}
}

// TestWritesInTxTellsBatchFromInput: writesInTx marks a failure of the
// transaction itself as batch-wide, and an input's failure as its own;
// a refused input answers alone and the others commit.
func TestWritesInTxTellsBatchFromInput(t *testing.T) {
	db := sqliteWithTableW(t)
	taken := errors.New("taken")
	bad := errors.New("bad")
	run := writesInTx(db, func(ctx context.Context, tx *sql.Tx, x int) (int, error) {
		switch x {
		case 2:
			return 0, taken // refused, having written nothing
		case 4:
			_, err := tx.ExecContext(ctx, `INSERT INTO w (x) VALUES ($1)`, x)
			return 0, errors.Join(bad, err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO w (x) VALUES ($1)`, x)
		return 10 * x, err
	}, func(err error) bool { return err == taken })
	count := func() (n int) {
		if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM w`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	outs, err := run(t.Context(), []int{1, 2, 3})
	if err != nil || outs[0].out != 10 || outs[1].err != taken || outs[2].out != 30 || count() != 2 {
		t.Fatalf("a refused input among others: %+v %v, %d rows", outs, err, count())
	}
	_, err = run(t.Context(), []int{5, 4, 6})
	if !errors.Is(err, bad) || errors.As(err, new(*batchWideError)) || count() != 2 {
		t.Fatalf("an input's failure: %v, %d rows (want its own error, nothing committed)", err, count())
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = run(cancelled, []int{7, 8})
	if !errors.As(err, new(*batchWideError)) || !errors.Is(err, context.Canceled) {
		t.Fatalf("BEGIN refused: %v, want a batch-wide error", err)
	}
}

// TestBatcherCallerLeavesTheQueue: a caller whose context ends while it
// waits in the queue gets the context's error, and its input is never
// run; one already taken by a batch gets the batch's answer.
func TestBatcherCallerLeavesTheQueue(t *testing.T) {
	release := make(chan struct{})
	r := &recorder{hold: release, started: make(chan struct{}), refuse: -1}
	b := NewBatcher(4, r.run)
	taken, cancelTaken := context.WithCancel(t.Context())
	var first int
	var firstErr error
	var wg sync.WaitGroup
	wg.Go(func() { first, firstErr = b.Do(taken, 1) })
	<-r.started // taken: its batch runs, held
	cancelTaken()

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Do(ctx, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a queued caller whose context ended: %v, want its deadline", err)
	}
	queued(t, b, 0)
	close(release)
	wg.Wait()
	if first != 2 || firstErr != nil {
		t.Errorf("the taken caller whose context ended got %d, %v, want its batch's answer 2", first, firstErr)
	}
	if !slices.EqualFunc(r.batches, [][]int{{1}}, slices.Equal) {
		t.Errorf("batches run: %v, want [[1]]: the caller that left was not run", r.batches)
	}
}

// TestBatchWaitsForTheWriterWithinItsCallers: on SQLite, while another
// holds the one writer connection (job workers queue there while another
// process holds the write lock), a batched write gives up when its
// caller's context ends, with that context's error and nothing written.
// Before, it waited batchTimeout (30 s) whatever the caller's deadline,
// and an API request was answered after the server's write timeout had
// cut its connection.
func TestBatchWaitsForTheWriterWithinItsCallers(t *testing.T) {
	db := sqliteWithTableW(t)
	b := NewBatcher(4, EachInTx(db, func(ctx context.Context, tx *sql.Tx, x int) (int, error) {
		_, err := tx.ExecContext(ctx, `INSERT INTO w (x) VALUES ($1)`, x)
		return x, err
	}))
	writer, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = b.Do(ctx, 1)
	if waited := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || waited > 5*time.Second {
		t.Errorf("a write while the writer is held: %v after %v, want the caller's deadline", err, waited)
	}
	writer.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM w`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d rows (%v), want none written", n, err)
	}
	// The writer free again, the next write goes through.
	if x, err := b.Do(t.Context(), 2); x != 2 || err != nil {
		t.Errorf("a write once the writer is free: %d, %v", x, err)
	}
}

// sqliteWithTableW opens a fresh SQLite store with a table w of integers.
func sqliteWithTableW(t *testing.T) *DB {
	t.Helper()
	db, err := Open(t.Context(), testdb.URL(t, "sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE w (x INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	return db
}
