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
	l := NewBuckets(RateLimit{PerSecond: 10, Burst: 20}, 100) // idle after 2 s
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
	// A token given back is there again; a later time than the last one
	// seen stands for it (no refill credited twice).
	_, giveBack := l.Reserve(t.Context(), "back", now)
	for range 19 {
		l.take("back", now)
	}
	giveBack()
	if _, ok := l.take("back", now.Add(-time.Second)); !ok {
		t.Error("a token given back cannot be taken")
	}
	if wait, ok := l.take("back", now.Add(-time.Second)); ok || wait != 100*time.Millisecond {
		t.Errorf("an earlier time than the last: ok=%v wait=%v, want refused for 100ms as at the last", ok, wait)
	}
}

// BenchmarkLimiterChecks measures what the limit adds to each
// authenticated request: the key's token (a known key meets no failure
// budget).
func BenchmarkLimiterChecks(b *testing.B) {
	keys := NewBuckets(RateLimit{PerSecond: 1e9, Burst: 1 << 30}, maxLimiters)
	now := time.Now()
	for b.Loop() {
		keys.take("0194a4c0-0000-7000-8000-000000000000", now)
	}
}
