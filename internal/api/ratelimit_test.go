package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/testserver"
)

// TestRateLimitPerMerchant: the limit is per merchant, as documented, so
// two keys of one merchant share one budget (a merchant cannot multiply
// its limit by making keys), and another merchant has its own.
func TestRateLimitPerMerchant(t *testing.T) {
	clock := testserver.NewClock(time.Now()) // stands still: no token comes back
	s := testserver.Start(t, testserver.Options{RateLimit: api.RateLimit{PerSecond: 1, Burst: 3}, Now: clock.Now})
	_, second, err := s.App.APIKeys.Create(t.Context(), s.MerchantID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	statuses := func(key string, n int) string {
		var out []string
		for range n {
			out = append(out, http.StatusText(do(t, s, "GET", "/v1/transactions", key, nil).status))
		}
		return strings.Join(out, ",")
	}
	if got := statuses(s.APIKey, 2); got != "OK,OK" {
		t.Fatalf("first key: %s", got)
	}
	if got := statuses(second, 2); got != "OK,Too Many Requests" {
		t.Errorf("second key of the same merchant: %s, want the one request left of the merchant's 3", got)
	}
	_, otherKey := s.NewMerchant(t)
	if got := statuses(otherKey, 3); got != "OK,OK,OK" {
		t.Errorf("another merchant: %s, want its own budget of 3", got)
	}
	clock.Advance(time.Second)
	if got := statuses(second, 2); got != "OK,Too Many Requests" {
		t.Errorf("second key a second later: %s, want one token back", got)
	}
}

// countingKeys counts the lookups that reach the real key store.
type countingKeys struct {
	api.KeyAuthenticator
	lookups atomic.Int64
}

func (c *countingKeys) Identify(ctx context.Context, key string, now time.Time) (string, string, error) {
	c.lookups.Add(1)
	return c.KeyAuthenticator.Identify(ctx, key, now)
}

// TestAuthFailuresLimitedPerAddress: a flood of bad keys from one address
// turns into 429s answered without a database lookup, other addresses are
// not affected, and the address recovers as its tokens come back.
func TestAuthFailuresLimitedPerAddress(t *testing.T) {
	clock := testserver.NewClock(time.Now())
	s := testserver.Start(t, testserver.Options{Now: clock.Now})
	keys := &countingKeys{KeyAuthenticator: s.App.APIKeys}
	h := api.NewServer(api.Config{Payments: s.App.Payments, Keys: keys, Now: clock.Now, Logger: slog.New(slog.DiscardHandler)}).Handler()

	get := func(addr, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/v1/transactions", nil)
		req.RemoteAddr = addr
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	bad := func(i int) string { return "service_live_" + strings.Repeat("x", 28) + string(rune('A'+i%26)) + "aaa" }

	codes := map[int]int{}
	for i := range 100 {
		w := get("198.51.100.7:40000", bad(i))
		codes[w.Code]++
		if w.Code == 429 && (w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"retry_after":1`)) {
			t.Fatalf("429 without retry_after: %v %s", w.Header(), w.Body)
		}
	}
	burst := api.AuthFailureLimit.Burst
	if codes[401] != burst || codes[429] != 100-burst || keys.lookups.Load() != int64(burst) {
		t.Fatalf("100 bad keys: %v, %d lookups; want %d × 401 (and lookups), then 429s without lookup", codes, keys.lookups.Load(), burst)
	}
	// A missing or malformed key needs no lookup: it is answered 401 as
	// the contract says, from the flooding address too, and spends nothing.
	for _, key := range []string{"", "not-a-key", "service_live_short", "service_live_" + strings.Repeat("-", 32)} {
		if w := get("198.51.100.7:40001", key); w.Code != 401 {
			t.Errorf("key %q from the flooding address: %d, want 401", key, w.Code)
		}
	}
	// A valid key never used in this process waits: without a lookup it
	// cannot be told from a guess (see requireKey).
	if w := get("198.51.100.7:40002", s.APIKey); w.Code != 429 || keys.lookups.Load() != int64(burst) {
		t.Errorf("valid key from the flooding address: %d, %d lookups", w.Code, keys.lookups.Load())
	}
	// Other addresses are untouched; an IPv6 /64 is one address.
	if w := get("203.0.113.9:5000", s.APIKey); w.Code != 200 {
		t.Errorf("valid key from another address: %d %s", w.Code, w.Body)
	}
	// Once it has authenticated, the key is looked up from the flooding
	// address too (a merchant behind the guesser's NAT keeps working),
	// while guesses from there still get 429 without a lookup.
	if w := get("198.51.100.7:40003", s.APIKey); w.Code != 200 {
		t.Errorf("a key known valid, from the flooding address: %d %s", w.Code, w.Body)
	}
	before := keys.lookups.Load()
	if w := get("198.51.100.7:40004", bad(1)); w.Code != 429 || keys.lookups.Load() != before {
		t.Errorf("a guess from the flooding address after that: %d, %d lookups", w.Code, keys.lookups.Load()-before)
	}
	for i := range burst {
		get("[2001:db8:1:2::"+string(rune('a'+i%6))+"]:443", bad(i))
	}
	if w := get("[2001:db8:1:2:ffff::1]:443", bad(0)); w.Code != 429 {
		t.Errorf("same IPv6 /64 after %d failures: %d", burst, w.Code)
	}
	if w := get("[2001:db8:1:3::1]:443", bad(0)); w.Code != 401 {
		t.Errorf("another IPv6 /64: %d", w.Code)
	}
	// Tokens come back at AuthFailureLimit.PerSecond.
	clock.Advance(time.Second)
	if w := get("198.51.100.7:40005", bad(2)); w.Code != 401 {
		t.Errorf("a wrong key a second after the flood: %d %s", w.Code, w.Body)
	}
}

// slowKeys is countingKeys whose lookups take a while, as a database's do
// under load: long enough for requests sent at once to overlap.
type slowKeys struct{ countingKeys }

func (k *slowKeys) Identify(ctx context.Context, key string, now time.Time) (string, string, error) {
	time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	return k.countingKeys.Identify(ctx, key, now)
}

// TestLimitsHoldAtOnce: requests sent at once meet the same limits as one
// after another. Bad keys cannot all reach the database before the first
// has failed (the address's budget is spent before each lookup); a
// merchant's burst with a key this process has not seen yet is not taken
// for guesses; and one key's requests get no more than its rate, though
// each read the clock before a lookup of its own length.
func TestLimitsHoldAtOnce(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	keys := &slowKeys{countingKeys{KeyAuthenticator: s.App.APIKeys}}
	limit := api.RateLimit{PerSecond: 50, Burst: 10}
	h := api.NewServer(api.Config{Payments: s.App.Payments, Keys: keys, RateLimit: limit, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}).Handler()
	// burst counts the answers to n requests sent at once: "200", "401",
	// and "429 address" or "429 key" by which limit refused.
	burst := func(n int, addr string, key func(i int) string) map[string]int {
		codes := make(chan string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req := httptest.NewRequest("GET", "/v1/transactions", nil)
				req.RemoteAddr = addr
				req.Header.Set("Authorization", "Bearer "+key(i))
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				switch {
				case w.Code != 429:
					codes <- strconv.Itoa(w.Code)
				case strings.Contains(w.Body.String(), "this address"):
					codes <- "429 address"
				default:
					codes <- "429 key"
				}
			})
		}
		wg.Wait()
		close(codes)
		count := map[string]int{}
		for c := range codes {
			count[c]++
		}
		return count
	}

	failures := api.AuthFailureLimit.Burst
	got := burst(60, "198.51.100.7:1", func(i int) string { return fmt.Sprintf("service_live_%032d", i) })
	if got["401"] > failures+1 || got["401"]+got["429 address"] != 60 || keys.lookups.Load() > int64(failures+1) {
		t.Errorf("60 bad keys at once: %v and %d lookups, want at most %d looked up (one more may come back meanwhile)", got, keys.lookups.Load(), failures)
	}
	// (Its own rate limit lets 10 of them through.)
	if got := burst(40, "203.0.113.9:1", func(int) string { return s.APIKey }); got["429 address"] != 0 || got["200"] < limit.Burst {
		t.Errorf("a merchant's 40 requests at once with a key not seen here yet: %v, want none taken for guesses", got)
	}

	// The merchant's budget was refilled meanwhile; 150 more at once.
	time.Sleep(time.Second)
	start := time.Now()
	got = burst(150, "203.0.113.9:1", func(int) string { return s.APIKey })
	allowed := limit.Burst + int(limit.PerSecond*time.Since(start).Seconds()) + 1
	if got["200"] > allowed || got["200"]+got["429 key"] != 150 {
		t.Errorf("150 requests at once with one key: %v, want at most %d allowed (burst %d, %v/s)", got, allowed, limit.Burst, limit.PerSecond)
	}
}

// TestAuthFailuresLimitedThroughServer runs the flood against the served
// app over HTTP, so the limit is known to be wired in.
func TestAuthFailuresLimitedThroughServer(t *testing.T) {
	clock := testserver.NewClock(time.Now())
	s := testserver.Start(t, testserver.Options{Now: clock.Now})
	var last response
	for range api.AuthFailureLimit.Burst + 1 {
		last = do(t, s, "GET", "/v1/transactions", "service_live_"+strings.Repeat("Z", 32), nil)
	}
	if last.status != 429 || last.errorField("code") != "RATE_LIMITED" || last.errorField("retry_after") != 1.0 {
		t.Errorf("after %d bad keys: %d %s", api.AuthFailureLimit.Burst, last.status, last.raw)
	}
}

// TestAuthFailuresBehindProxy: behind a trusted reverse proxy the
// failed-authentication limit counts each client named by
// X-Forwarded-For, not the proxy; what a client writes into that header
// itself, or sends from anywhere but the proxy, does not choose its
// address. Without the proxy listed, every client behind it shares one
// budget (which is why operators list it).
func TestAuthFailuresBehindProxy(t *testing.T) {
	clock := testserver.NewClock(time.Now())
	s := testserver.Start(t, testserver.Options{Now: clock.Now})
	proxies, err := api.ParseTrustedProxies(" 10.0.0.5, fd00::/8 ")
	if err != nil {
		t.Fatal(err)
	}
	handler := func(trusted []netip.Prefix) http.Handler {
		return api.NewServer(api.Config{Payments: s.App.Payments, Keys: s.App.APIKeys, Now: clock.Now,
			Logger: slog.New(slog.DiscardHandler), TrustedProxies: trusted}).Handler()
	}
	bad := "service_live_" + strings.Repeat("x", 32)
	// guess sends a wrong key: 401 while the client's address has tokens
	// left, 429 once they are spent.
	guess := func(h http.Handler, peer, forwarded string) int {
		req := httptest.NewRequest("GET", "/v1/transactions", nil)
		req.RemoteAddr = peer
		if forwarded != "" {
			req.Header.Set("X-Forwarded-For", forwarded)
		}
		req.Header.Set("Authorization", "Bearer "+bad)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	flood := func(h http.Handler, peer, forwarded string) {
		for range api.AuthFailureLimit.Burst {
			guess(h, peer, forwarded)
		}
	}

	behind := handler(proxies)
	flood(behind, "10.0.0.5:4000", "198.51.100.7")
	if code := guess(behind, "10.0.0.5:4001", "198.51.100.7"); code != 429 {
		t.Errorf("the flooding client behind the proxy: %d, want 429", code)
	}
	if code := guess(behind, "10.0.0.5:4002", "203.0.113.9"); code != 401 {
		t.Errorf("another client behind the same proxy: %d, want 401", code)
	}
	// The flooder writes another address into the header itself: the
	// proxy appends the one it saw, which is what counts.
	if code := guess(behind, "10.0.0.5:4003", "203.0.113.9, 198.51.100.7"); code != 429 {
		t.Errorf("the flooder with a forged X-Forwarded-For: %d, want 429", code)
	}
	// Two proxies in a row (the second, an IPv6 one, listed too).
	if code := guess(behind, "[fd00::2]:443", "198.51.100.7, 10.0.0.5"); code != 429 {
		t.Errorf("the flooder through two proxies: %d, want 429", code)
	}
	// From a peer that is not a listed proxy, the header counts for nothing.
	flood(behind, "192.0.2.1:5000", "203.0.113.10")
	if code := guess(behind, "10.0.0.5:4004", "203.0.113.10"); code != 401 {
		t.Errorf("the address a direct client claimed: %d, want 401", code)
	}
	if code := guess(behind, "192.0.2.1:5001", ""); code != 429 {
		t.Errorf("the direct client itself: %d, want 429", code)
	}

	// Not listed: the proxy's clients share its budget.
	plain := handler(nil)
	flood(plain, "10.0.0.6:4000", "198.51.100.8")
	if code := guess(plain, "10.0.0.6:4001", "203.0.113.11"); code != 429 {
		t.Errorf("another client behind an unlisted proxy: %d, want 429 (the proxy's shared budget)", code)
	}
}
