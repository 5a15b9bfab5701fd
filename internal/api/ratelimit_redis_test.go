package api_test

import (
	"crypto/rand"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/testlog"
)

// redisURL is the Redis server of the tests: MOMOPAY_TEST_REDIS_URL, or
// 127.0.0.1:6379. Without one the tests skip, unless
// MOMOPAY_REQUIRE_REDIS=1 (CI), where they fail.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	url := os.Getenv("MOMOPAY_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		if os.Getenv("MOMOPAY_REQUIRE_REDIS") == "1" {
			t.Fatalf("Redis at %s: %v (MOMOPAY_REQUIRE_REDIS=1)", url, err)
		}
		t.Skipf("no Redis at %s (%v): set MOMOPAY_TEST_REDIS_URL, or start redis-server", url, err)
	}
	return rdb
}

// TestRedisLimitSharedByInstances: two limiters, as in two instances, each
// with its own connection, share one budget per merchant; another
// merchant has its own; and a refused request says how long to wait.
func TestRedisLimitSharedByInstances(t *testing.T) {
	t.Parallel()
	cfg := api.RateLimit{PerSecond: 0.5, Burst: 4} // a token every 2 s: none comes back during the test
	log := slog.New(slog.DiscardHandler)
	one := api.NewRedisLimiter(redisClient(t), cfg, log)
	two := api.NewRedisLimiter(redisClient(t), cfg, log)
	key, other := "test-"+rand.Text(), "test-"+rand.Text()

	var got []string
	var lastWait time.Duration
	for i := range 8 {
		l := one
		if i%2 == 1 {
			l = two
		}
		wait, ok := l.Take(t.Context(), key, time.Now())
		got = append(got, map[bool]string{true: "ok", false: "limited"}[ok])
		lastWait = wait
	}
	if s := strings.Join(got, ","); s != "ok,ok,ok,ok,limited,limited,limited,limited" {
		t.Errorf("8 requests through two instances, burst 4: %s", s)
	}
	if lastWait <= 0 || lastWait > 2*time.Second {
		t.Errorf("wait when limited: %s, want up to 2 s", lastWait)
	}
	if _, ok := two.Take(t.Context(), other, time.Now()); !ok {
		t.Errorf("another merchant was limited")
	}
}

// unreachableRedis is a client of url, where nothing listens (port 1),
// that gives up on a call at once.
func unreachableRedis(t *testing.T, url string) *redis.Client {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.DialTimeout, opts.MaxRetries = 100*time.Millisecond, 0
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestRedisDownFailsOpenToLocal: when Redis does not answer, each instance
// limits on its own (fail open to the per-instance limit), quickly, and
// says so once in its log, without the password of the URL.
func TestRedisDownFailsOpenToLocal(t *testing.T) {
	t.Parallel()
	rdb := unreachableRedis(t, "redis://:topsecret@127.0.0.1:1/0")
	var logs testlog.Buffer
	l := api.NewRedisLimiter(rdb, api.RateLimit{PerSecond: 0.5, Burst: 3}, slog.New(slog.NewTextHandler(&logs, nil)))
	start := time.Now()
	var got []bool
	for range 5 {
		_, ok := l.Take(t.Context(), "down-key", time.Now())
		got = append(got, ok)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("5 requests with Redis down took %s", took)
	}
	if want := []bool{true, true, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("with Redis down: %v, want the local burst of 3 then limited", got)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "Redis does not answer") {
		t.Errorf("want one warning, got:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "topsecret") {
		t.Errorf("the Redis password reached the log:\n%s", logs.String())
	}
}

// TestRedisOutageAndRecovery: a Redis that goes away mid-way and comes
// back: requests go on (per-instance limit, carrying on from each
// instance's own count) meanwhile, and the shared count resumes once it
// answers again, with a line in the log each way.
func TestRedisOutageAndRecovery(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on PATH")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	startRedis := func() *exec.Cmd {
		cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	server := startRedis()
	opts, _ := redis.ParseURL("redis://127.0.0.1:" + port)
	opts.DialTimeout, opts.ReadTimeout, opts.MaxRetries = 100*time.Millisecond, 100*time.Millisecond, 0
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	waitPing := func() {
		for range 100 {
			if rdb.Ping(t.Context()).Err() == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("redis-server did not start")
	}
	waitPing()
	var logs testlog.Buffer
	cfg := api.RateLimit{PerSecond: 0.5, Burst: 2}
	r := api.NewRedis(rdb, slog.New(slog.NewTextHandler(&logs, nil)))
	l := r.KeyLimiter(cfg)
	if err := r.Ping(t.Context()); err != nil {
		t.Fatalf("Ping with Redis up: %v", err)
	}
	// The burst is spent in Redis: another instance sees it spent.
	for range 2 {
		l.Take(t.Context(), "k", time.Now())
	}
	other := api.NewRedisLimiter(rdb, cfg, slog.New(slog.DiscardHandler))
	if _, ok := other.Take(t.Context(), "k", time.Now()); ok {
		t.Fatal("the burst spent through one instance is not spent for the other")
	}

	server.Process.Kill()
	server.Wait()
	// Down: each instance counts on its own, carrying on from what it let
	// through: this one spent its burst (no fresh one for an outage), the
	// other let nothing through and has its own.
	if _, ok := l.Take(t.Context(), "k", time.Now()); ok {
		t.Errorf("with Redis down, an instance that had spent the burst got a fresh one")
	}
	if _, ok := other.Take(t.Context(), "k", time.Now()); !ok {
		t.Errorf("with Redis down, the request was refused instead of counted locally")
	}
	if !strings.Contains(logs.String(), "Redis does not answer") {
		t.Errorf("no warning when Redis went away:\n%s", logs.String())
	}
	// Ping (momopay_redis_up) says what the counters do: they are not
	// counting in Redis.
	if err := r.Ping(t.Context()); err == nil {
		t.Error("Ping with Redis down: nil")
	}

	startRedis() // empty: Redis keeps nothing on disk here
	waitPing()
	time.Sleep(1100 * time.Millisecond) // the limiter leaves Redis alone 1 s after a failure
	if err := r.Ping(t.Context()); err != nil {
		t.Errorf("Ping with Redis back: %v", err)
	}
	for range 2 {
		if _, ok := l.Take(t.Context(), "k2", time.Now()); !ok {
			t.Errorf("with Redis back, a fresh key was refused")
		}
	}
	if _, ok := other.Take(t.Context(), "k2", time.Now()); ok {
		t.Errorf("with Redis back, the count is not shared again")
	}
	if !strings.Contains(logs.String(), "Redis answers again") {
		t.Errorf("no line when Redis came back:\n%s", logs.String())
	}
}

// TestRedisThrottleSharedByInstances: the tries of a key spent through
// two instances come from one budget; a try given back and a key forgotten
// count on the other instance too; another throttle's key of the same name
// has its own; and the key (an email here) is kept in Redis only hashed.
func TestRedisThrottleSharedByInstances(t *testing.T) {
	t.Parallel()
	cfg := api.RateLimit{PerSecond: 1.0 / 30, Burst: 3} // a try every 30 s: none comes back during the test
	log := slog.New(slog.DiscardHandler)
	rdb := redisClient(t)
	name := "test-" + rand.Text()
	one := api.NewRedis(rdb, log).Throttle(name, cfg)
	two := api.NewRedis(redisClient(t), log).Throttle(name, cfg)
	key := "guess-" + strings.ToLower(rand.Text()) + "@example.com"
	ctx := t.Context()

	var backs []func()
	for i := range 3 {
		th := one
		if i%2 == 1 {
			th = two
		}
		wait, back := th.Reserve(ctx, key, time.Now())
		if wait != 0 || back == nil {
			t.Fatalf("try %d of a burst of 3 refused (wait %s)", i+1, wait)
		}
		backs = append(backs, back)
	}
	for _, th := range []api.Throttle{one, two} {
		wait, back := th.Reserve(ctx, key, time.Now())
		if wait < 25*time.Second || wait > 30*time.Second || back != nil {
			t.Errorf("a 4th try: wait %s (giveBack %v), want refused for about 30 s on either instance", wait, back != nil)
		}
	}
	if wait, _ := api.NewRedis(rdb, log).Throttle("other-"+name, cfg).Reserve(ctx, key, time.Now()); wait != 0 {
		t.Errorf("another throttle's budget for the same key was spent (wait %s)", wait)
	}

	backs[0]() // given back through the first instance: the second has it
	if wait, _ := two.Reserve(ctx, key, time.Now()); wait != 0 {
		t.Errorf("a try given back through one instance is not there for the other (wait %s)", wait)
	}
	if wait, _ := two.Reserve(ctx, key, time.Now()); wait == 0 {
		t.Error("one try given back let two through")
	}

	one.Forget(ctx, key)
	for i := range 3 {
		if wait, _ := two.Reserve(ctx, key, time.Now()); wait != 0 {
			t.Errorf("after Forget on one instance, try %d on the other refused (wait %s)", i+1, wait)
		}
	}

	keys, err := rdb.Keys(ctx, "*"+name+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Error("no key of the throttle in Redis")
	}
	for _, k := range keys {
		if strings.Contains(k, "example.com") {
			t.Errorf("Redis key %q holds the email", k)
		}
	}
}

// TestRedisThrottleDownFailsOpenToLocal: with Redis unreachable, a
// throttle counts in this process (its burst, then refused), without
// waiting on Redis, and says so once, sharing the warning with the key
// limiter of the same Redis.
func TestRedisThrottleDownFailsOpenToLocal(t *testing.T) {
	t.Parallel()
	rdb := unreachableRedis(t, "redis://127.0.0.1:1/0")
	var logs testlog.Buffer
	r := api.NewRedis(rdb, slog.New(slog.NewTextHandler(&logs, nil)))
	th := r.Throttle("down", api.RateLimit{PerSecond: 1.0 / 30, Burst: 3})
	lim := r.KeyLimiter(api.RateLimit{PerSecond: 1, Burst: 1})
	start := time.Now()
	var got []bool
	for i := range 6 {
		wait, back := th.Reserve(t.Context(), "k", time.Now())
		got = append(got, wait == 0)
		if i == 2 {
			back() // the third try is given back
		}
	}
	lim.Take(t.Context(), "key", time.Now())
	if took := time.Since(start); took > time.Second {
		t.Errorf("7 calls with Redis down took %s", took)
	}
	if want := []bool{true, true, true, true, false, false}; !slices.Equal(got, want) {
		t.Errorf("with Redis down: %v, want the local burst of 3 and the try given back, then refused", got)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "sign-in throttles are counted per instance") {
		t.Errorf("want one warning, got:\n%s", logs.String())
	}
}

// BenchmarkRedisLimiter measures what counting a request in Redis adds to
// it (one round trip with a Lua script), against the local limiter.
func BenchmarkRedisLimiter(b *testing.B) {
	cfg := api.RateLimit{PerSecond: 1e9, Burst: 1 << 30}
	b.Run("redis", func(b *testing.B) {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
		defer rdb.Close()
		if err := rdb.Ping(b.Context()).Err(); err != nil {
			b.Skipf("no Redis: %v", err)
		}
		l := api.NewRedisLimiter(rdb, cfg, slog.New(slog.DiscardHandler))
		key := "bench-" + rand.Text()
		for b.Loop() {
			if _, ok := l.Take(b.Context(), key, time.Now()); !ok {
				b.Fatal("limited")
			}
		}
	})
	b.Run("local", func(b *testing.B) {
		l := api.NewLocalLimiter(cfg)
		for b.Loop() {
			l.Take(b.Context(), "k", time.Now())
		}
	})
}
