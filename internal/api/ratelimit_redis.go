package api

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// How the Redis limiter behaves when Redis does not answer. A call gets
// redisCallTimeout; after a failure Redis is left alone for redisRetryAfter
// (so an outage costs the requests of that window no waiting at all), and
// the outage is logged at most once per redisWarnEvery.
const (
	redisCallTimeout = 100 * time.Millisecond
	redisRetryAfter  = time.Second
	redisWarnEvery   = 30 * time.Second
)

// RedisLimiter counts each API key's requests in Redis (GCRA, with
// github.com/go-redis/redis_rate), so the limit holds across every
// instance that shares the Redis server.
//
// When Redis fails, it fails open to the per-process limit: each instance
// counts the key on its own, as without Redis, carrying on from what it let
// through while Redis answered, and logs a warning. The
// limit guards the service against runaway clients, which the per-process
// limit still does (up to N times the rate behind N instances); refusing
// requests instead would turn an outage of Redis, which holds no payment
// data, into an outage of payments.
type RedisLimiter struct {
	cfg      RateLimit
	limit    redis_rate.Limit
	limiter  *redis_rate.Limiter
	fallback *Buckets
	log      *slog.Logger

	mu        sync.Mutex
	downUntil time.Time // no call to Redis before this
	warned    time.Time // last warning logged
	down      bool      // the last call failed
	told      bool      // the outage under way was logged
}

// NewRedisLimiter counts cfg in the Redis server rdb talks to.
func NewRedisLimiter(rdb *redis.Client, cfg RateLimit, log *slog.Logger) *RedisLimiter {
	l := &RedisLimiter{
		cfg: cfg, limiter: redis_rate.NewLimiter(rdb), fallback: NewBuckets(cfg, maxLimiters), log: log,
	}
	if cfg.PerSecond > 0 {
		// One request every 1/PerSecond: a Rate of 1 per that period
		// keeps fractional rates (0.5 a second) exact.
		l.limit = redis_rate.Limit{Rate: 1, Period: time.Duration(float64(time.Second) / cfg.PerSecond), Burst: max(cfg.Burst, 1)}
	}
	return l
}

// redisKey is where a key's bucket lives (redis_rate adds "rate:").
func redisKey(key string) string { return "momopay:apikey:" + key }

// Take implements KeyLimiter.
func (l *RedisLimiter) Take(ctx context.Context, key string, now time.Time) (time.Duration, bool) {
	if l.cfg.PerSecond <= 0 {
		return 0, true
	}
	if l.skipping(time.Now()) {
		return l.fallback.take(key, now)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisCallTimeout)
	defer cancel()
	res, err := l.limiter.Allow(ctx, redisKey(key), l.limit)
	l.record(err, time.Now())
	if err != nil {
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

func (l *RedisLimiter) skipping(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return now.Before(l.downUntil)
}

// record notes the outcome of a call to Redis, and logs when Redis goes
// away (at most every redisWarnEvery) and when it comes back.
func (l *RedisLimiter) record(err error, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		if l.down && l.told {
			// One line back for each warning: a Redis that times out now
			// and then under load would otherwise write one per blip.
			l.told = false
			l.log.Info("Redis answers again: rate limits are counted across instances again")
		}
		l.down = false
		return
	}
	l.down, l.downUntil = true, now.Add(redisRetryAfter)
	if now.Sub(l.warned) >= redisWarnEvery {
		l.warned, l.told = now, true
		l.log.Warn("Redis does not answer: rate limits are counted per instance until it does", "err", err.Error())
	}
}
