package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestHashGateKnownDevicesFirst: with the slot taken, checks from known
// devices are served ahead of the others that came before them, one for
// each other check while both kinds wait, the rest in the order they
// came; a check whose context ends while it waits leaves the queue; and
// every slot is free again at the end.
func TestHashGateKnownDevicesFirst(t *testing.T) {
	g := newHashGate(1)
	if err := g.acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	queued := func(n0, n1 int) {
		t.Helper()
		for range 5000 {
			g.mu.Lock()
			a, b := len(g.waiting[0]), len(g.waiting[1])
			g.mu.Unlock()
			if a == n0 && b == n1 {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatalf("never %d others and %d known devices waiting", n0, n1)
	}
	served := make(chan string)
	next := map[string]chan struct{}{}
	wait := func(name string, known bool) {
		done := make(chan struct{})
		next[name] = done
		go func() {
			if err := g.acquire(context.Background(), known); err != nil {
				t.Error(err)
				return
			}
			served <- name
			<-done
			g.release()
		}()
	}
	wait("other 1", false)
	queued(1, 0)
	wait("other 2", false)
	queued(2, 0)
	// One that gives up while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() { gaveUp <- g.acquire(ctx, false) }()
	queued(3, 0)
	wait("other 3", false)
	queued(4, 0)
	wait("known 1", true)
	queued(4, 1)
	wait("known 2", true)
	queued(4, 2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("a check whose context ended while it waited: %v", err)
	}
	queued(3, 2)

	g.release()
	var order []string
	for range 5 {
		name := <-served
		order = append(order, name)
		close(next[name])
	}
	if want := []string{"known 1", "other 1", "known 2", "other 2", "other 3"}; !slices.Equal(order, want) {
		t.Errorf("served %q, want %q", order, want)
	}
	for range 5000 {
		g.mu.Lock()
		free := g.free
		g.mu.Unlock()
		if free == 1 {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Error("the slot was not given back")
}
