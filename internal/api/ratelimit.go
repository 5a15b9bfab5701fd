package api

import (
	"context"
	"crypto/sha256"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimit is the sustained rate and burst allowed per merchant, all its
// API keys together; a PerSecond of 0 turns limiting off. Counted per
// process (NewLocalLimiter), a merchant gets up to N times this behind N
// instances, which is what a guard against runaway clients needs; counted
// in Redis (Redis.KeyLimiter), it holds across every instance.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// DefaultRateLimit is generous for a merchant's server and stops loops.
var DefaultRateLimit = RateLimit{PerSecond: 50, Burst: 100}

// AuthFailureLimit bounds failed authentications per client address. A
// merchant's server that has its key right never meets it; a client trying
// keys gets 20 at once and then 10 a second, each answered without a
// database lookup once the address has no token left.
var AuthFailureLimit = RateLimit{PerSecond: 10, Burst: 20}

// Throttle slows guessing: each try of a key (a client address, an
// account) spends from the key's budget before it is checked, so tries
// sent at once get no further than tries one after another, and a try that
// proves not to be a guess is given back.
type Throttle interface {
	// Reserve spends one try of key. When none is left it spends nothing
	// and returns how long until one is (and a nil giveBack); else
	// giveBack returns the try, for one that did not count (a key that
	// authenticated, a sign-in that succeeded).
	Reserve(ctx context.Context, key string, now time.Time) (wait time.Duration, giveBack func())
	// Forget gives key a fresh budget.
	Forget(ctx context.Context, key string)
}

// Throttles makes the throttle called name, counting cfg: in Redis when
// the service has one (Redis.Throttle), so that it holds across every
// instance, else in this process (LocalThrottles).
type Throttles func(name string, cfg RateLimit) Throttle

// LocalThrottles counts each throttle in this process alone.
func LocalThrottles(_ string, cfg RateLimit) Throttle { return NewBuckets(cfg, maxLimiters) }

// KeyLimiter spends one request of the budget named key (a merchant's, for
// the requests of all its API keys); when none is left it spends nothing
// and says how long until a request is allowed again.
type KeyLimiter interface {
	Take(ctx context.Context, key string, now time.Time) (wait time.Duration, ok bool)
}

// NewLocalLimiter counts each merchant's requests in this process alone.
func NewLocalLimiter(cfg RateLimit) KeyLimiter {
	return NewBuckets(cfg, maxLimiters)
}

// Take implements KeyLimiter.
func (l *Buckets) Take(_ context.Context, key string, now time.Time) (time.Duration, bool) {
	return l.take(key, now)
}

// maxLimiters bounds each limiter set's memory (about 200 bytes an entry)
// against many keys or, for failures, many addresses.
const maxLimiters = 100_000

// Buckets holds one token bucket per key (an API key id, a client address,
// or for the dashboard's sign-in throttles an account), in this process.
// An entry whose bucket has refilled its whole burst is the same as a new
// one, so such entries are dropped; when the set is still full, an
// arbitrary entry goes, which at worst gives that key a fresh burst.
type Buckets struct {
	cfg RateLimit
	// idle is how long an emptied bucket takes to refill: sweeps for full
	// buckets come at most this often.
	idle  time.Duration
	max   int
	mu    sync.Mutex
	by    map[string]*rate.Limiter
	swept time.Time
	// latest is the latest time a bucket was given (see Reserve).
	latest time.Time
}

// NewBuckets holds up to capacity buckets of cfg.
func NewBuckets(cfg RateLimit, capacity int) *Buckets {
	l := &Buckets{cfg: cfg, max: capacity, by: map[string]*rate.Limiter{}}
	if cfg.PerSecond > 0 {
		l.idle = time.Duration(float64(max(cfg.Burst, 1)) / cfg.PerSecond * float64(time.Second))
	}
	return l
}

// take spends one token of key; when none is left it returns how long until
// one is, and spends nothing.
func (l *Buckets) take(key string, now time.Time) (time.Duration, bool) {
	wait, _ := l.Reserve(context.Background(), key, now)
	return wait, wait == 0
}

// Reserve implements Throttle: take, which also returns giveBack.
//
// Buckets are given times in the order of their calls, under l.mu: a
// request that read the clock before a slower lookup would otherwise hand
// its bucket a time earlier than the last one, which rate counts as fresh
// refill (an audit's 200 clients got 60% over the limit so).
func (l *Buckets) Reserve(_ context.Context, key string, now time.Time) (wait time.Duration, giveBack func()) {
	if l.cfg.PerSecond <= 0 {
		return 0, func() {}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.latest) {
		now = l.latest
	}
	l.latest = now
	lim, ok := l.by[key]
	if !ok {
		if len(l.by) >= l.max {
			l.evict(now)
		}
		lim = rate.NewLimiter(rate.Limit(l.cfg.PerSecond), l.cfg.Burst)
		l.by[key] = lim
	}
	r := lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, nil
	}
	// Cancelled as of the moment it was taken (rate restores nothing for
	// a later one), the bucket counts the lookup's time as refill once
	// more: a few hundredths of a token.
	return 0, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		r.CancelAt(now)
	}
}

// Forget implements Throttle.
func (l *Buckets) Forget(_ context.Context, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.by, key)
}

// evict makes room: a sweep of full buckets at most once per idle period
// (so a set full of busy keys does not rescan on every new key), else one
// arbitrary entry.
func (l *Buckets) evict(now time.Time) {
	if now.Sub(l.swept) >= l.idle {
		l.swept = now
		for k, lim := range l.by {
			if lim.TokensAt(now) >= float64(l.cfg.Burst) {
				delete(l.by, k)
			}
		}
	}
	for k := range l.by {
		if len(l.by) < l.max {
			break
		}
		delete(l.by, k)
	}
}

// ClientKey is the key under which the failed-authentication limits of the
// API and the dashboard count a client: the peer's IP from RemoteAddr
// (X-Forwarded-For is anyone's to write; behind trusted proxies,
// behindProxies has put the client's address there), and for IPv6 its
// /64, since one host commonly holds a whole /64 and could otherwise take
// a fresh budget from each of its addresses.
func ClientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

// maxKnownKeys bounds knownKeys: far more keys than one deployment uses at
// once, at about 100 bytes each.
const maxKnownKeys = 10_000

// knownKeys holds the SHA-256 digests of the API keys that authenticated in
// this process, so that an address out of failure tokens still gets its
// valid keys looked up (requireKey). Only a successful lookup adds one, so
// a guesser cannot fill it; a failed lookup removes the key (revoked).
// When full, an arbitrary entry goes: at worst that key waits like an
// unknown one.
//
// Every authenticated request adds its key, which is nearly always there
// already: that check takes the read lock only, so concurrent requests do
// not queue on one mutex.
type knownKeys struct {
	mu sync.RWMutex
	m  map[[sha256.Size]byte]struct{}
}

func (k *knownKeys) has(d [sha256.Size]byte) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	_, ok := k.m[d]
	return ok
}

func (k *knownKeys) add(d [sha256.Size]byte) {
	if k.has(d) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[[sha256.Size]byte]struct{}{}
	}
	if _, ok := k.m[d]; ok {
		return
	}
	for e := range k.m {
		if len(k.m) < maxKnownKeys {
			break
		}
		delete(k.m, e)
	}
	k.m[d] = struct{}{}
}

func (k *knownKeys) forget(d [sha256.Size]byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, d)
}
