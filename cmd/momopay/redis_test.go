package main_test

import (
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testdb"
)

// testRedisURL is the Redis of the tests (MOMOPAY_TEST_REDIS_URL, or
// 127.0.0.1:6379); without one the test skips, or fails when
// MOMOPAY_REQUIRE_REDIS=1.
func testRedisURL(t *testing.T) string {
	t.Helper()
	url, addr := os.Getenv("MOMOPAY_TEST_REDIS_URL"), "127.0.0.1:6379"
	if url == "" {
		url = "redis://" + addr + "/0"
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
	} else if os.Getenv("MOMOPAY_TEST_REDIS_URL") == "" {
		if os.Getenv("MOMOPAY_REQUIRE_REDIS") == "1" {
			t.Fatalf("no Redis at %s (MOMOPAY_REQUIRE_REDIS=1): %v", addr, err)
		}
		t.Skipf("no Redis at %s (%v): start redis-server, or set MOMOPAY_TEST_REDIS_URL", addr, err)
	}
	return url
}

// TestRateLimitAcrossInstances: with --redis-url, two instances on one
// database share each API key's budget; without it, each has its own.
func TestRateLimitAcrossInstances(t *testing.T) {
	t.Parallel()
	redisURL := testRedisURL(t)
	const burst = 10
	limit := []string{"--rate-limit", "0.2", "--rate-burst", "10"} // a token every 5 s: at most one comes back here
	allowed := func(key string, ps ...*process) int {
		ok := 0
		for i := range 3 * burst {
			req, _ := http.NewRequest("GET", ps[i%len(ps)].url+"/v1/transactions", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				ok++
			}
		}
		return ok
	}

	shared := testdb.URL(t, "postgres")
	a := serve(t, shared, append(limit, "--redis-url", redisURL)...)
	key, _ := demoCredentials(t, a)
	b := serve(t, shared, append(limit, "--redis-url", redisURL)...)
	if n := allowed(key, a, b); n < burst || n > burst+1 {
		t.Errorf("with Redis: %d of %d requests through two instances allowed, want %d (one budget)", n, 3*burst, burst)
	}

	apart := testdb.URL(t, "postgres")
	c := serve(t, apart, limit...)
	key, _ = demoCredentials(t, c)
	d := serve(t, apart, limit...)
	if n := allowed(key, c, d); n < 2*burst || n > 2*burst+2 {
		t.Errorf("without Redis: %d of %d requests through two instances allowed, want %d (a budget each)", n, 3*burst, 2*burst)
	}
}
