package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// APIKeyPrefix starts every API key (contract §5).
const APIKeyPrefix = "service_live_"

const keyAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// APIKey is the stored record of a key: never the key itself, only its hash
// and a short prefix so a merchant can tell keys apart.
type APIKey struct {
	ID         string     `json:"id"`
	MerchantID string     `json:"merchant_id"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

// ErrKeyNotFound is returned for a key id that the merchant does not own.
var ErrKeyNotFound = errors.New("API key not found")

// APIKeys stores merchants' API keys.
type APIKeys struct {
	db *DB
	// cache spares the database a lookup per request on PostgreSQL while
	// RunRevocationListener runs (keycache.go).
	cache *keyCache
	// failedAt holds, per key id, when its last_used_at write last failed
	// (the database could not write): the next try waits a minute, on
	// SQLite too, where the cache is off and last_used_at is read afresh.
	failedAt sync.Map
}

// NewAPIKeys returns the API key store.
func NewAPIKeys(db *DB) *APIKeys { return &APIKeys{db: db, cache: newKeyCache()} }

// NewAPIKey draws a key: the prefix and 32 random alphanumerics from
// crypto/rand, without modulo bias.
func NewAPIKey() string {
	out := make([]byte, 0, 32)
	buf := make([]byte, 48)
	for len(out) < 32 {
		rand.Read(buf)
		for _, b := range buf {
			if b < 248 && len(out) < 32 { // 248 = 4*62
				out = append(out, keyAlphabet[int(b)%len(keyAlphabet)])
			}
		}
	}
	return APIKeyPrefix + string(out)
}

// WellFormedKey reports whether key has the shape of an API key (the
// prefix and 32 alphanumerics): anything else is refused without a lookup.
func WellFormedKey(key string) bool {
	if !strings.HasPrefix(key, APIKeyPrefix) || len(key) != len(APIKeyPrefix)+32 {
		return false
	}
	for i := len(APIKeyPrefix); i < len(key); i++ {
		if !strings.ContainsRune(keyAlphabet, rune(key[i])) {
			return false
		}
	}
	return true
}

// hashKey is SHA-256: keys carry 190 bits of entropy, so a slow hash adds
// nothing and a fast one keeps authentication cheap on every request.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Create makes a new key for a merchant and returns the record and the key,
// which is never stored and so can be shown only now.
func (s *APIKeys) Create(ctx context.Context, merchantID string, now time.Time) (*APIKey, string, error) {
	return s.CreateOnce(ctx, merchantID, "", now)
}

// ErrKeyRequestDone is CreateOnce's answer to a request it already
// carried out.
var ErrKeyRequestDone = errors.New("this request already created its API key")

// keyRequests is the namespace of the key ids CreateOnce derives.
var keyRequests = uuid.MustParse("4f1c2a8e-6d0b-4e57-9a3f-2b8c7d91e605")

// MaxActiveKeys bounds a merchant's API keys that are not revoked: one per
// server and environment is plenty, and without a bound a merchant made
// 1,761 keys in the DoS audit (its keys page grew to 800 KB).
const MaxActiveKeys = 50

// ErrTooManyKeys refuses a key past MaxActiveKeys.
var ErrTooManyKeys = &payment.Error{Code: payment.EUNPROCESSABLE,
	Message: fmt.Sprintf("a merchant has at most %d active API keys: revoke one you no longer use first", MaxActiveKeys)}

// CreateOnce is Create for a request that may arrive more than once (a
// form sent again by a reload): request, chosen by the caller for each
// distinct request, fixes the key's id, so a repeat inserts nothing and
// gets the first key's record with ErrKeyRequestDone (and never the key,
// which was shown once). An empty request is a new one each time. A key
// past MaxActiveKeys is refused with ErrTooManyKeys.
func (s *APIKeys) CreateOnce(ctx context.Context, merchantID, request string, now time.Time) (*APIKey, string, error) {
	id := uuid.NewString()
	if request != "" {
		id = uuid.NewSHA1(keyRequests, []byte(merchantID+"/"+request)).String()
	}
	key := NewAPIKey()
	k := &APIKey{ID: id, MerchantID: merchantID, Prefix: key[:len(APIKeyPrefix)+6], CreatedAt: now.UTC().Truncate(time.Microsecond)}
	var added bool
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if s.db.Dialect == Postgres {
			// Two concurrent additions must not both see room for one
			// (SQLite has one writer).
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('api keys of ' || $1, 0))`, merchantID); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, merchant_id, prefix, key_hash, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO NOTHING`, k.ID, k.MerchantID, k.Prefix, hashKey(key), s.db.Time(k.CreatedAt))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 0 {
			return err // a repeat: counted when it was made
		}
		var active int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE merchant_id = $1 AND revoked_at IS NULL`, merchantID).Scan(&active); err != nil {
			return err
		}
		if active > MaxActiveKeys {
			return ErrTooManyKeys
		}
		added = true
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if added {
		return k, key, nil
	}
	first, err := scanKey(s.db.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE merchant_id = $1 AND id = $2`, merchantID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("API key %s exists, but not for merchant %s", id, merchantID)
	}
	if err != nil {
		return nil, "", err
	}
	return first, "", ErrKeyRequestDone
}

// keyColumns are an APIKey's, as scanKey reads them.
const keyColumns = `id, merchant_id, prefix, created_at, last_used_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (*APIKey, error) {
	var k APIKey
	var created, used, revoked Timestamp
	if err := row.Scan(&k.ID, &k.MerchantID, &k.Prefix, &created, &used, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = created.Time, optional(used), optional(revoked)
	return &k, nil
}

// List returns a merchant's keys, oldest first.
func (s *APIKeys) List(ctx context.Context, merchantID string) ([]APIKey, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+keyColumns+`
		FROM api_keys WHERE merchant_id = $1 ORDER BY created_at, id`, merchantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *k)
	}
	return out, rows.Err()
}

func optional(ts Timestamp) *time.Time {
	if ts.IsZero() {
		return nil
	}
	return &ts.Time
}

// Revoke ends a key at once; ErrKeyNotFound if the merchant has no such key.
// It reports whether this call revoked it: of revocations at once (or of a
// key revoked before), one does, so the audit log records one.
// On PostgreSQL the revocation is announced (keyRevokedChannel) in the same
// transaction, so every instance's key cache forgets the key as it commits.
func (s *APIKeys) Revoke(ctx context.Context, merchantID, keyID string, now time.Time) (revoked bool, err error) {
	if !payment.ValidID(keyID) {
		return false, ErrKeyNotFound
	}
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE merchant_id = $2 AND id = $3 AND revoked_at IS NULL`,
			s.db.Time(now), merchantID, keyID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM api_keys WHERE merchant_id = $1 AND id = $2`, merchantID, keyID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return ErrKeyNotFound
			}
			return err // revoked before
		}
		revoked = true
		if s.db.Dialect == Postgres {
			_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, keyRevokedChannel, keyID)
		}
		return err
	})
	if err != nil {
		return false, err
	}
	s.cache.forget(keyID) // this instance at once, whatever the notification does
	return revoked, nil
}

// lastUsedGranularity limits last_used_at writes to one a minute per key,
// so authentication stays a read on the hot path.
const lastUsedGranularity = time.Minute

// lastUsedWait bounds the wait for a last_used_at write, which a database
// that cannot write just now (SQLite's write lock held elsewhere) would
// otherwise make every request of the key wait out.
const lastUsedWait = 2 * time.Second

// Authenticate returns the merchant id owning a live key, or "" for a
// missing, unknown or revoked key.
func (s *APIKeys) Authenticate(ctx context.Context, key string, now time.Time) (string, error) {
	_, merchantID, err := s.Identify(ctx, key, now)
	return merchantID, err
}

// Identify is Authenticate with the key's own id as well, which the API's
// rate limit is kept by: each key has its budget, as documented.
func (s *APIKeys) Identify(ctx context.Context, key string, now time.Time) (keyID, merchantID string, err error) {
	if !WellFormedKey(key) {
		return "", "", nil
	}
	hash := hashKey(key)
	k, epoch, hit := s.cache.lookup(hash)
	if !hit {
		var used, revoked Timestamp
		err = s.db.Reader().QueryRowContext(ctx, `SELECT id, merchant_id, last_used_at, revoked_at FROM api_keys WHERE key_hash = $1`,
			hash).Scan(&k.id, &k.merchantID, &used, &revoked)
		if errors.Is(err, sql.ErrNoRows) {
			return "", "", nil
		}
		if err != nil {
			return "", "", err
		}
		if !revoked.IsZero() {
			return "", "", nil
		}
		k.lastUsed = used.Time
		s.cache.store(hash, k, epoch)
	}
	if now.Sub(k.lastUsed) >= lastUsedGranularity && s.writeDue(k.id, now) {
		// Bookkeeping, not a condition of the request: a database that
		// cannot take the write just now (SQLite's write lock held by
		// another process, which reads get past) leaves last_used_at as
		// it was, and a request a minute later writes it. Before, the
		// request failed with 503 for it, a read included. The write
		// waits lastUsedWait at most (on SQLite, until the busy timeout
		// it may be in ends): a request is not held for bookkeeping.
		write, cancel := context.WithTimeout(ctx, lastUsedWait)
		_, err := s.db.ExecContext(write, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2`, s.db.Time(now), k.id)
		cancel()
		switch {
		case err == nil:
			s.cache.usedAt(hash, now)
			s.failedAt.Delete(k.id)
		case Unavailable(err) || write.Err() != nil:
			// The next try is a minute away: while the database cannot
			// write, one request a minute per key waits lastUsedWait,
			// not every one.
			s.failedAt.Store(k.id, now)
		default:
			return "", "", err
		}
	}
	return k.id, k.merchantID, nil
}

// writeDue says whether key id's last_used_at write may be tried at now:
// not within a minute of a failed one.
func (s *APIKeys) writeDue(id string, now time.Time) bool {
	at, failed := s.failedAt.Load(id)
	return !failed || now.Sub(at.(time.Time)) >= lastUsedGranularity
}
