package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// How the Redis counters behave when Redis does not answer. A call gets
// redisCallTimeout; after a failure Redis is left alone for redisRetryAfter
// (so an outage costs the requests of that window no waiting at all), and
// the outage is logged at most once per redisWarnEvery.
const (
	redisCallTimeout = 100 * time.Millisecond
	redisRetryAfter  = time.Second
	redisWarnEvery   = 30 * time.Second
)

// Redis counts the API keys' rate limit (KeyLimiter) and the throttles of
// failed authentications (Throttle) in one Redis server, so that each
// holds across every instance that shares it (GCRA, with
// github.com/go-redis/redis_rate).
//
// When Redis fails, every counter fails open to its per-process count:
// each instance counts on its own, as without Redis, carrying on from what
// it let through while Redis answered, and one warning says so. A rate
// limit guards the service against runaway clients, and a throttle slows
// guessing, which per-process counts still do (up to N times the rate
// behind N instances); refusing requests instead would turn an outage of
// Redis, which holds no payment data, into an outage of payments and of
// the dashboard. The counters share one view of Redis's health, so an
// outage is logged once for all of them.
type Redis struct {
	rdb     *redis.Client
	limiter *redis_rate.Limiter
	log     *slog.Logger

	mu        sync.Mutex
	downUntil time.Time // no call to Redis before this
	warned    time.Time // last warning logged
	down      bool      // the last call failed
	told      bool      // the outage under way was logged
}

// NewRedis counts in the Redis server rdb talks to.
func NewRedis(rdb *redis.Client, log *slog.Logger) *Redis {
	return &Redis{rdb: rdb, limiter: redis_rate.NewLimiter(rdb), log: log}
}

// limit is cfg as redis_rate counts it: one request every 1/PerSecond (a
// Rate of 1 per that period keeps fractional rates such as 0.5 a second
// exact), up to Burst at once.
func limit(cfg RateLimit) redis_rate.Limit {
	return redis_rate.Limit{Rate: 1, Period: time.Duration(float64(time.Second) / cfg.PerSecond), Burst: max(cfg.Burst, 1)}
}

// ask makes one call to Redis, within redisCallTimeout, and records its
// outcome, unless Redis is being left alone after a failure; it returns
// errRedisSkipped then, else the call's error.
func (r *Redis) ask(ctx context.Context, call func(context.Context) error) error {
	if r.skipping(time.Now()) {
		return errRedisSkipped
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisCallTimeout)
	defer cancel()
	err := call(ctx)
	r.record(err, time.Now())
	return err
}

// errRedisSkipped is ask's answer while Redis is left alone.
var errRedisSkipped = errors.New("Redis failed within the last second: limits are counted in this process")

// allowN spends n of key's budget (a negative n gives back), unless Redis
// is being left alone after a failure; ok is false when Redis was not
// asked or did not answer.
func (r *Redis) allowN(ctx context.Context, key string, lim redis_rate.Limit, n int) (res *redis_rate.Result, ok bool) {
	err := r.ask(ctx, func(ctx context.Context) (err error) {
		res, err = r.limiter.AllowN(ctx, key, lim, n)
		return err
	})
	return res, err == nil
}

// reset forgets key's count, when Redis answers.
func (r *Redis) reset(ctx context.Context, key string) {
	r.ask(ctx, func(ctx context.Context) error { return r.limiter.Reset(ctx, key) })
}

// Ping reports whether the counters count in Redis now: nil when Redis
// answers a PING within redisCallTimeout. It shares the counters' view of
// Redis's health: while they are leaving Redis alone after a failure it
// fails without asking, and its own outcome counts as theirs do.
func (r *Redis) Ping(ctx context.Context) error {
	return r.ask(ctx, func(ctx context.Context) error { return r.rdb.Ping(ctx).Err() })
}

func (r *Redis) skipping(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now.Before(r.downUntil)
}

// record notes the outcome of a call to Redis, and logs when Redis goes
// away (at most every redisWarnEvery) and when it comes back.
func (r *Redis) record(err error, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		if r.down && r.told {
			// One line back for each warning: a Redis that times out now
			// and then under load would otherwise write one per blip.
			r.told = false
			r.log.Info("Redis answers again: rate limits and sign-in throttles are counted across instances again")
		}
		r.down = false
		return
	}
	r.down, r.downUntil = true, now.Add(redisRetryAfter)
	if now.Sub(r.warned) >= redisWarnEvery {
		r.warned, r.told = now, true
		r.log.Warn("Redis does not answer: rate limits and sign-in throttles are counted per instance until it does", "err", err.Error())
	}
}

// RedisLimiter is an API key rate limit counted in Redis (Redis.KeyLimiter).
type RedisLimiter struct {
	redis    *Redis
	cfg      RateLimit
	limit    redis_rate.Limit
	fallback *Buckets
}

// NewRedisLimiter counts cfg in the Redis server rdb talks to, on a view
// of Redis's health of its own (NewRedis shares one among its counters).
func NewRedisLimiter(rdb *redis.Client, cfg RateLimit, log *slog.Logger) *RedisLimiter {
	return NewRedis(rdb, log).KeyLimiter(cfg)
}

// KeyLimiter counts each API key's requests against cfg.
func (r *Redis) KeyLimiter(cfg RateLimit) *RedisLimiter {
	l := &RedisLimiter{redis: r, cfg: cfg, fallback: NewBuckets(cfg, maxLimiters)}
	if cfg.PerSecond > 0 {
		l.limit = limit(cfg)
	}
	return l
}

// redisKey is where a merchant's bucket lives (redis_rate adds "rate:").
func redisKey(merchantID string) string { return "momopay:merchant:" + merchantID }

// Take implements KeyLimiter.
func (l *RedisLimiter) Take(ctx context.Context, key string, now time.Time) (time.Duration, bool) {
	if l.cfg.PerSecond <= 0 {
		return 0, true
	}
	res, ok := l.redis.allowN(ctx, redisKey(key), l.limit, 1)
	if !ok {
		return l.fallback.take(key, now)
	}
	if res.Allowed == 0 {
		return max(res.RetryAfter, time.Millisecond), false
	}
	// The local count follows what this instance let through, so that a
	// moment without Redis carries on from it: a fallback bucket left full
	// gave each key a fresh burst at every blip (an audit saw 60% over the
	// limit on one instance when Redis timed out under load).
	l.fallback.take(key, now)
	return 0, true
}

// RedisThrottle is a Throttle counted in Redis (Redis.Throttle).
type RedisThrottle struct {
	redis    *Redis
	name     string
	cfg      RateLimit
	limit    redis_rate.Limit
	fallback *Buckets
}

// Throttle counts the tries of each key against cfg under name (one name
// for each throttle, so that their keys never meet). Keys are kept in
// Redis as their SHA-256: they are emails and client addresses.
func (r *Redis) Throttle(name string, cfg RateLimit) Throttle {
	if cfg.PerSecond <= 0 {
		return NewBuckets(cfg, 0) // off: nothing to count
	}
	return &RedisThrottle{redis: r, name: name, cfg: cfg, limit: limit(cfg), fallback: NewBuckets(cfg, maxLimiters)}
}

func (t *RedisThrottle) redisKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "momopay:throttle:" + t.name + ":" + hex.EncodeToString(sum[:])
}

// Reserve implements Throttle. A try given back is a negative cost to
// redis_rate's GCRA, which moves the key's next free moment back by one
// interval. When that moment would fall in the past (the budget was full
// but for that try and has refilled since), redis_rate leaves the key as
// it was, which keeps less than one try spent until it refills.
func (t *RedisThrottle) Reserve(ctx context.Context, key string, now time.Time) (time.Duration, func()) {
	rkey := t.redisKey(key)
	res, ok := t.redis.allowN(ctx, rkey, t.limit, 1)
	if !ok {
		return t.fallback.Reserve(ctx, key, now)
	}
	if res.Allowed == 0 {
		return max(res.RetryAfter, time.Millisecond), nil
	}
	// The local count follows, as RedisLimiter.Take's does.
	_, localBack := t.fallback.Reserve(ctx, key, now)
	return 0, func() {
		t.redis.allowN(ctx, rkey, t.limit, -1)
		if localBack != nil {
			localBack()
		}
	}
}

// Forget implements Throttle.
func (t *RedisThrottle) Forget(ctx context.Context, key string) {
	t.fallback.Forget(ctx, key)
	t.redis.reset(ctx, t.redisKey(key))
}
