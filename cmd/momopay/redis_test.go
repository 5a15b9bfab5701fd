package main_test

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
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

// TestSignInThrottleAcrossInstances: with --redis-url, the failed sign-ins
// of an account through two instances come from one budget (10, then one
// every 30 s), and so do an address's failed API keys (20, then 10 a
// second); without it, each instance counts its own.
func TestSignInThrottleAcrossInstances(t *testing.T) {
	t.Parallel()
	redisURL := testRedisURL(t)
	proxy := []string{"--trusted-proxies", "127.0.0.1/32"}
	// send makes n requests, to each instance in turn, from a client
	// address of their own (named through the trusted proxy), so that
	// neither another test nor an earlier run has spent from its budgets
	// in Redis, and returns their statuses.
	send := func(n int, ps []*process, request func(base string) *http.Request) []int {
		b := make([]byte, 3)
		rand.Read(b)
		client := fmt.Sprintf("10.%d.%d.%d", b[0], b[1], b[2])
		var got []int
		for i := range n {
			req := request(ps[i%len(ps)].url)
			req.Header.Set("X-Forwarded-For", client)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			got = append(got, r.StatusCode)
		}
		return got
	}
	// signIns sends n wrong sign-ins of a new email.
	signIns := func(n int, ps ...*process) []int {
		email := "nobody-" + strings.ToLower(rand.Text()) + "@example.com"
		return send(n, ps, func(base string) *http.Request {
			req, _ := http.NewRequest("POST", base+"/auth/login",
				strings.NewReader(`{"email":"`+email+`","password":"not the password"}`))
			req.Header.Set("Content-Type", "application/json")
			return req
		})
	}
	// badKeys sends 30 made-up API keys and counts those answered 401.
	badKeys := func(ps ...*process) (unauthorized int) {
		got := send(30, ps, func(base string) *http.Request {
			req, _ := http.NewRequest("GET", base+"/v1/transactions", nil)
			req.Header.Set("Authorization", "Bearer service_live_"+rand.Text()[:26]+"abcdef")
			return req
		})
		for _, status := range got {
			if status == http.StatusUnauthorized {
				unauthorized++
			}
		}
		return unauthorized
	}
	want := func(fails, refused int) []int {
		return append(slices.Repeat([]int{http.StatusUnauthorized}, fails), slices.Repeat([]int{http.StatusTooManyRequests}, refused)...)
	}

	shared := testdb.URL(t, "postgres")
	a := serve(t, shared, append(proxy, "--redis-url", redisURL)...)
	b := serve(t, shared, append(proxy, "--redis-url", redisURL)...)
	if got := signIns(12, a, b); !slices.Equal(got, want(10, 2)) {
		t.Errorf("with Redis, 12 failed sign-ins through two instances: %v, want 10 failures then refused (one budget)", got)
	}
	// 10 tries a second come back: a few may while the 30 are sent.
	if n := badKeys(a, b); n < 20 || n > 25 {
		t.Errorf("with Redis, %d of 30 made-up API keys through two instances were looked up (401), want 20 and the few that refilled (one budget)", n)
	}

	apart := testdb.URL(t, "postgres")
	c := serve(t, apart, proxy...)
	d := serve(t, apart, proxy...)
	if got := signIns(12, c, d); !slices.Equal(got, want(12, 0)) {
		t.Errorf("without Redis, 12 failed sign-ins through two instances: %v, want 12 failures (a budget each)", got)
	}
	if n := badKeys(c, d); n != 30 {
		t.Errorf("without Redis, %d of 30 made-up API keys through two instances were looked up (401), want 30 (a budget of 20 each)", n)
	}
}

// TestRedisUpMetric: with --redis-url, the admin listener's metrics say
// whether Redis answers (momopay_redis_up 1), and when it does not (0),
// which before only a log line said while every instance counted its
// limits on its own; without --redis-url there is no such series.
func TestRedisUpMetric(t *testing.T) {
	t.Parallel()
	// A port nothing listens on: Redis there never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "redis://" + ln.Addr().String() + "/0"
	ln.Close()
	for _, c := range []struct {
		name  string
		redis func(t *testing.T) string // the --redis-url, or ""
		want  string
	}{
		{"Redis answers", testRedisURL, "momopay_redis_up 1\n"},
		{"Redis does not answer", func(*testing.T) string { return gone }, "momopay_redis_up 0\n"},
		{"no Redis", func(*testing.T) string { return "" }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var flags []string
			if url := c.redis(t); url != "" {
				flags = []string{"--redis-url", url}
			}
			checkRedisUp(t, serve(t, filepath.Join(t.TempDir(), "redis.db"), flags...), c.want)
		})
	}
}

// checkRedisUp reads p's metrics and checks its momopay_redis_up line
// (want "" for none).
func checkRedisUp(t *testing.T, p *process, want string) {
	t.Helper()
	admin := adminLine.FindStringSubmatch(p.stderr.String())
	if admin == nil {
		t.Fatalf("no admin listener logged:\n%s", p.stderr)
	}
	r, err := http.Get(admin[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	has := strings.Contains(string(body), "momopay_redis_up")
	if want == "" && has || want != "" && !strings.Contains(string(body), want) {
		t.Errorf("momopay_redis_up in the metrics: %q, want %q", redisUpLine.FindString(string(body)), want)
	}
}

var redisUpLine = regexp.MustCompile(`(?m)^momopay_redis_up .*$`)
