package dashboard

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLinesOnePerAddress: one address's sign-ins compare their passwords
// one at a time, however many it sends at once, while another address's
// sign-in goes ahead of them; a sign-in whose request ends while it
// waits leaves the line; and the lines are gone once nobody is in them.
func TestLinesOnePerAddress(t *testing.T) {
	var l lines
	first, err := l.wait(context.Background(), "198.51.100.7")
	if err != nil {
		t.Fatal(err)
	}
	// 20 more from the same address wait behind the first…
	var running, most atomic.Int32
	var through sync.WaitGroup
	for range 20 {
		through.Go(func() {
			done, err := l.wait(context.Background(), "198.51.100.7")
			if err != nil {
				t.Error(err)
				return
			}
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			running.Add(-1)
			done()
		})
	}
	waitFor(t, &l, "198.51.100.7", 21)
	// …while another address is let through at once.
	other, err := l.wait(context.Background(), "203.0.113.9")
	if err != nil {
		t.Fatalf("another address waited behind the first: %v", err)
	}
	other()
	// A sign-in of the first address whose request ends while it waits
	// gives up its turn with the request's error.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		done, err := l.wait(ctx, "198.51.100.7")
		if err == nil {
			done()
		}
		gaveUp <- err
	}()
	waitFor(t, &l, "198.51.100.7", 22)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Errorf("a sign-in whose request ended while it waited: %v, want context.Canceled", err)
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d sign-ins of the address ran while its first one held the line", n)
	}
	first()
	through.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("at most %d sign-ins of one address ran at once, want 1", m)
	}
	if n := l.inUse(); n != 0 {
		t.Errorf("%d lines left with nobody in them", n)
	}
}

// waitFor returns once n sign-ins hold or wait for key's line.
func waitFor(t *testing.T, l *lines, key string, n int) {
	t.Helper()
	for range 10_000 {
		l.mu.Lock()
		users := 0
		if ln := l.byKey[key]; ln != nil {
			users = ln.users
		}
		l.mu.Unlock()
		if users == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s's line never had %d sign-ins in it", key, n)
}
