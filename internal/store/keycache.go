package store

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// keyRevokedChannel is the PostgreSQL notification channel on which
// APIKeys.Revoke announces a revoked key's id, inside the revoking
// transaction, so every instance's cache forgets the key the moment the
// revocation commits.
const keyRevokedChannel = "momopay_api_key_revoked"

// keyCacheTTL bounds how long a cached key is trusted without asking the
// database again. Revocations reach the cache through notifications within
// milliseconds; the TTL is the bound for what notifications cannot see: a
// row changed by hand in SQL, or a listening connection that died without
// its socket saying so.
const keyCacheTTL = 10 * time.Second

// keyCache remembers live API keys by hash, so that an authenticated
// request on PostgreSQL costs no database round trip for its key (a get
// was two queries, the key and the payment; profiles put half of its cost
// in the first). It trusts its entries only while a listener is connected
// (RunRevocationListener): without one, a key revoked by another instance
// could not be forgotten, so every lookup goes to the database, as it
// always does on SQLite.
type keyCache struct {
	mu sync.Mutex
	// live says a listener is connected and has flushed what it may have
	// missed while it was not.
	live bool
	// epoch changes with every revocation heard and every listener
	// (dis)connection. A lookup that read the database under another
	// epoch does not store its answer: a revocation may have been heard
	// between its read and its store.
	epoch  uint64
	byHash map[string]*cachedKey
}

// cachedKey is what Identify needs of a live key.
type cachedKey struct {
	id, merchantID string
	lastUsed       time.Time // as written in the database
	loaded         time.Time // when the database said the key was live
}

func newKeyCache() *keyCache {
	return &keyCache{byHash: map[string]*cachedKey{}}
}

// lookup returns the cached key for hash while the cache is live and the
// entry is younger than keyCacheTTL, and the current epoch either way.
func (c *keyCache) lookup(hash string) (cachedKey, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.byHash[hash]
	// Wall-clock time, not the service's injectable clock: the TTL bounds
	// how stale an entry really is.
	if !ok || !c.live || time.Since(k.loaded) >= keyCacheTTL {
		return cachedKey{}, c.epoch, false
	}
	return *k, c.epoch, true
}

// store keeps a live key read from the database under epoch, unless the
// epoch moved since (see keyCache.epoch) or no listener is connected.
func (c *keyCache) store(hash string, k cachedKey, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || epoch != c.epoch {
		return
	}
	k.loaded = time.Now()
	c.byHash[hash] = &k
}

// usedAt records a last_used_at written for a cached key.
func (c *keyCache) usedAt(hash string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.byHash[hash]; ok {
		k.lastUsed = at
	}
}

// forget drops the key with this id and moves the epoch. It walks the
// entries: they are a service's live keys, a handful per merchant, and a
// revocation is rare.
func (c *keyCache) forget(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for hash, k := range c.byHash {
		if k.id == id {
			delete(c.byHash, hash)
		}
	}
}

// setLive empties the cache and says whether entries may be kept from now
// on: on connecting (what was missed while disconnected is unknown) and on
// losing the connection (revocations can no longer be heard).
func (c *keyCache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	c.live = live
	clear(c.byHash)
}

// RunRevocationListener keeps the API key cache of s in step with
// revocations made by any instance, until ctx ends: it LISTENs on its own
// PostgreSQL connection and forgets each key whose revocation it hears.
// The cache is used only while this connection is up; when it drops, the
// cache is emptied and lookups go to the database until it is back. It
// does nothing on SQLite, where another process (the CLI) can revoke a key
// without any way to tell this one.
func (s *APIKeys) RunRevocationListener(ctx context.Context, log *slog.Logger) {
	defer s.cache.setLive(false)
	s.db.Listen(ctx, keyRevokedChannel, "API key revocation listener (keys are looked up in the database meanwhile)", log,
		s.cache.setLive, s.cache.forget)
}
