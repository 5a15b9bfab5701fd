package app

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/store"
)

// openRedis parses a --redis-url and makes its client. It does not
// connect: go-redis dials on first use, and a Redis that is down when serve
// starts is the same as one that goes down later (api.Redis).
func openRedis(url string) (*redis.Client, error) {
	opts, err := parseRedisURL(url)
	if err != nil {
		return nil, fmt.Errorf("--redis-url %s: %v: give redis://[:PASSWORD@]HOST:PORT[/DB] or rediss:// for TLS (env MOMOPAY_REDIS_URL)", store.Redact(url), err)
	}
	// A rate limit check runs on every authenticated request: Redis must
	// answer fast or be skipped, not hold requests for go-redis's seconds.
	opts.DialTimeout = 250 * time.Millisecond
	opts.ReadTimeout = 100 * time.Millisecond
	opts.WriteTimeout = 100 * time.Millisecond
	opts.MaxRetries = 0
	return redis.NewClient(opts), nil
}

// parseRedisURL is redis.ParseURL with errors that never quote the URL:
// url.Parse's (a bad port, an unclosed '[') hold it whole, password
// included. The callers name the URL through store.Redact.
func parseRedisURL(url string) (*redis.Options, error) {
	opts, err := redis.ParseURL(url)
	if uerr, ok := errors.AsType[*neturl.Error](err); ok {
		err = uerr.Err
	}
	if _, ok := err.(neturl.EscapeError); ok {
		// It quotes the bad escape, which may be part of the password.
		err = errors.New("a '%' is not followed by two hexadecimal digits (write a '%' of the password as %25)")
	}
	return opts, err
}

// counters makes the API keys' rate limiter and the throttles of failed
// authentications (the API's per address, the dashboard's sign-ins): in
// Redis when --redis-url is set, so that each holds across every instance,
// else in this process.
func (a *App) counters() (api.KeyLimiter, api.Throttles, error) {
	if a.cfg.RedisURL == "" {
		return api.NewLocalLimiter(a.cfg.RateLimit), api.LocalThrottles, nil
	}
	rdb, err := openRedis(a.cfg.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	a.redis = rdb
	r := api.NewRedis(rdb, a.cfg.Logger)
	a.Metrics.ObserveRedis(r.Ping)
	return r.KeyLimiter(a.cfg.RateLimit), r.Throttle, nil
}

func checkRedisURL(_ context.Context, s settings) []string {
	if url := s.str("redis-url"); url != "" {
		if _, err := parseRedisURL(url); err != nil {
			return []string{fmt.Sprintf("--redis-url %s is not a Redis URL: %v: give redis://[:PASSWORD@]HOST:PORT[/DB] (env MOMOPAY_REDIS_URL)", store.Redact(url), err)}
		}
	}
	return nil
}

// checkRedisReachable pings Redis: serve starts without it (rate limits
// then count per instance), but a deployment that sets it means it.
func checkRedisReachable(ctx context.Context, s settings) []string {
	url := s.str("redis-url")
	if url == "" {
		return nil
	}
	rdb, err := openRedis(url)
	if err != nil {
		return nil // checkRedisURL says so
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return []string{fmt.Sprintf("--redis-url: Redis at %s does not answer: %v; serve would count rate limits and sign-in throttles per instance until it does (env MOMOPAY_REDIS_URL)", store.Redact(url), err)}
	}
	return nil
}
