package api

import (
	"fmt"
	"testing"
	"time"
)

// TestLimiterSetBounded: however many keys or addresses come, a limiter set
// holds at most its capacity, and entries idle long enough to have refilled
// are the first to go.
func TestLimiterSetBounded(t *testing.T) {
	l := newLimiterSet(RateLimit{PerSecond: 10, Burst: 20}, 100) // idle after 2 s
	now := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	for i := range 50 {
		l.take(fmt.Sprint("old-", i), now)
	}
	now = now.Add(3 * time.Second)
	for i := range 1000 {
		l.take(fmt.Sprint("new-", i), now)
		if len(l.by) > 100 {
			t.Fatalf("%d entries after %d keys, want at most 100", len(l.by), i+1)
		}
	}
	for k := range l.by {
		if k[:4] == "old-" {
			t.Errorf("idle entry %s kept while busy ones were evicted", k)
		}
	}
	// A key that spent its burst stays limited while it is in the set.
	for range 20 {
		l.take("busy", now)
	}
	if wait, ok := l.take("busy", now); ok || wait != 100*time.Millisecond {
		t.Errorf("busy key: ok=%v wait=%v, want refused for 100ms", ok, wait)
	}
	if wait, out := l.empty("busy", now); !out || wait != 100*time.Millisecond {
		t.Errorf("empty(busy) = %v %v", wait, out)
	}
	if _, out := l.empty("never-seen", now); out {
		t.Error("an unknown key is reported empty")
	}
}

// BenchmarkLimiterChecks measures what the limits add to each authenticated
// request: the address's failure check and the key's token.
func BenchmarkLimiterChecks(b *testing.B) {
	failures := newLimiterSet(AuthFailureLimit, maxLimiters)
	keys := newLimiterSet(RateLimit{PerSecond: 1e9, Burst: 1 << 30}, maxLimiters)
	now := time.Now()
	for b.Loop() {
		failures.empty(ClientKey("198.51.100.7:40000"), now)
		keys.take("0194a4c0-0000-7000-8000-000000000000", now)
	}
}
