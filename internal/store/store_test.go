package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// open returns a migrated database of engine; the store's conformance
// suite runs every test on both engines.
func open(t testing.TB, engine string) *store.DB {
	t.Helper()
	return openURL(t, testdb.URL(t, engine))
}

// openURL opens and migrates the database at url; called twice with one
// url, it gives two instances of the service one database.
func openURL(t testing.TB, url string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return db
}

func eachEngine(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	testdb.Each(t, func(t *testing.T, engine string) {
		fn(t, open(t, engine))
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatalf("second migration: %v", err)
		}
	})
}

// TestAPIKeysBounded: a merchant has at most MaxActiveKeys keys that are
// not revoked, also when they are asked for at once: one more is refused
// and not stored, a repeated request is still answered as one, another
// merchant is not affected, and revoking a key makes room.
func TestAPIKeysBounded(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		merchants, keys := store.NewMerchants(db), store.NewAPIKeys(db)
		m, err := merchants.Create(ctx, "Shop", "shop@example.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var made, refused atomic.Int32
		var madeBy atomic.Value // one request that made its key
		for i := range store.MaxActiveKeys + 5 {
			wg.Go(func() {
				request := fmt.Sprintf("request-%d", i)
				_, _, err := keys.CreateOnce(ctx, m.ID, request, now)
				switch {
				case err == nil:
					made.Add(1)
					madeBy.Store(request)
				case errors.Is(err, store.ErrTooManyKeys):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		list, err := keys.List(ctx, m.ID)
		if err != nil || made.Load() != store.MaxActiveKeys || refused.Load() != 5 || len(list) != store.MaxActiveKeys {
			t.Fatalf("%d keys asked at once: %d made, %d refused, %d stored (%v); want %d, 5, %d", store.MaxActiveKeys+5,
				made.Load(), refused.Load(), len(list), err, store.MaxActiveKeys, store.MaxActiveKeys)
		}
		if _, _, err := keys.CreateOnce(ctx, m.ID, madeBy.Load().(string), now); !errors.Is(err, store.ErrKeyRequestDone) {
			t.Errorf("a repeated request at the bound: %v, want ErrKeyRequestDone", err)
		}
		other, err := merchants.Create(ctx, "Other", "other@example.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := keys.Create(ctx, other.ID, now); err != nil {
			t.Errorf("another merchant's key: %v", err)
		}
		if _, err := keys.Revoke(ctx, m.ID, list[0].ID, now); err != nil {
			t.Fatal(err)
		}
		if _, _, err := keys.Create(ctx, m.ID, now); err != nil {
			t.Errorf("a key after one was revoked: %v", err)
		}
		if _, _, err := keys.Create(ctx, m.ID, now); !errors.Is(err, store.ErrTooManyKeys) {
			t.Errorf("one more: %v, want ErrTooManyKeys", err)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		now := time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)
		m, err := store.NewMerchants(db).Create(ctx, "Shop", "shop@example.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		keys := store.NewAPIKeys(db)
		rec, key, err := keys.Create(ctx, m.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, "service_live_") || len(key) != 45 || !strings.HasPrefix(key, rec.Prefix) {
			t.Errorf("key %q, prefix %q", key, rec.Prefix)
		}
		// The key itself is nowhere in the database.
		var stored int
		db.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE key_hash = $1 OR prefix = $1`, key).Scan(&stored)
		if stored != 0 {
			t.Error("the key is stored in clear")
		}

		for _, bad := range []string{"", key[:44], key + "x", strings.ToUpper(key), "service_live_" + strings.Repeat("0", 32)} {
			if got, err := keys.Authenticate(ctx, bad, now); err != nil || got != "" {
				t.Errorf("%q authenticates as %q (%v)", bad, got, err)
			}
		}
		if got, err := keys.Authenticate(ctx, key, now); err != nil || got != m.ID {
			t.Fatalf("the key authenticates as %q (%v)", got, err)
		}
		// last_used_at is written at most once a minute.
		list := func() store.APIKey {
			ks, err := keys.List(ctx, m.ID)
			if err != nil || len(ks) != 1 {
				t.Fatal(err, ks)
			}
			return ks[0]
		}
		if lu := list().LastUsedAt; lu == nil || !lu.Equal(now) {
			t.Errorf("last_used_at %v, want %v", lu, now)
		}
		keys.Authenticate(ctx, key, now.Add(30*time.Second))
		if lu := list().LastUsedAt; !lu.Equal(now) {
			t.Errorf("last_used_at moved within the minute: %v", lu)
		}
		keys.Authenticate(ctx, key, now.Add(2*time.Minute))
		if lu := list().LastUsedAt; !lu.Equal(now.Add(2 * time.Minute)) {
			t.Errorf("last_used_at %v after a minute", lu)
		}

		// Revocation is per merchant and final.
		other, _ := store.NewMerchants(db).Create(ctx, "Other", "other@example.td", "correct horse battery", now)
		if _, err := keys.Revoke(ctx, other.ID, rec.ID, now); !errors.Is(err, store.ErrKeyNotFound) {
			t.Errorf("another merchant revoked the key: %v", err)
		}
		if revoked, err := keys.Revoke(ctx, m.ID, rec.ID, now.Add(time.Hour)); err != nil || !revoked {
			t.Fatal(revoked, err)
		}
		if got, _ := keys.Authenticate(ctx, key, now.Add(2*time.Hour)); got != "" {
			t.Error("a revoked key authenticates")
		}
		if revoked, err := keys.Revoke(ctx, m.ID, rec.ID, now.Add(3*time.Hour)); err != nil || revoked {
			t.Errorf("a second revoke: revoked %v, %v; want false, no error", revoked, err)
		}
		if rv := list().RevokedAt; rv == nil || !rv.Equal(now.Add(time.Hour)) {
			t.Errorf("revoked_at %v: a second revoke must not move it", rv)
		}
	})
}

// TestRevokeOnceAtOnce: of 20 revocations of one key at once, exactly one
// reports that it revoked the key, so the audit log records one (on
// PostgreSQL each had logged one: up to 19 entries for one key).
func TestRevokeOnceAtOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		now := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
		m, err := store.NewMerchants(db).Create(ctx, "Shop", "owner@shop.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		keys := store.NewAPIKeys(db)
		for round := range 5 {
			rec, _, err := keys.Create(ctx, m.ID, now)
			if err != nil {
				t.Fatal(err)
			}
			var revokedBy atomic.Int64
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					revoked, err := keys.Revoke(ctx, m.ID, rec.ID, now)
					if err != nil {
						t.Error(err)
					}
					if revoked {
						revokedBy.Add(1)
					}
				})
			}
			wg.Wait()
			if n := revokedBy.Load(); n != 1 {
				t.Errorf("round %d: %d of 20 concurrent revocations said they revoked the key, want 1", round, n)
			}
		}
	})
}

func TestMerchants(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		ms := store.NewMerchants(db)
		now := time.Now()
		m, err := ms.Create(ctx, " Boutique ", "Owner@Example.TD", "correct horse battery", now)
		if err != nil || m.Name != "Boutique" || m.Email != "owner@example.td" {
			t.Fatalf("%+v %v", m, err)
		}
		var hash string
		db.QueryRowContext(ctx, `SELECT password_hash FROM merchants WHERE id = $1`, m.ID).Scan(&hash)
		if !strings.HasPrefix(hash, "$2a$") || strings.Contains(hash, "correct horse") {
			t.Errorf("password not stored as bcrypt: %q", hash)
		}
		if _, err := ms.Create(ctx, "Again", "owner@example.td", "correct horse battery", now); !errors.Is(err, store.ErrEmailTaken) {
			t.Errorf("duplicate email: %v", err)
		}
		for _, c := range [][3]string{{"", "a@b.td", "correct horse battery"}, {"X", "not an email", "correct horse battery"}, {"X", "x@b.td", "short"}} {
			if _, err := ms.Create(ctx, c[0], c[1], c[2], now); err == nil {
				t.Errorf("accepted %v", c)
			}
		}
		if ok, _ := ms.Exists(ctx, m.ID); !ok {
			t.Error("Exists is false for a merchant")
		}
		if ok, _ := ms.Exists(ctx, "nope"); ok {
			t.Error("Exists is true for a malformed id")
		}
	})
}

// TestTimestampOrder: times round-trip at microsecond precision and compare
// in time order on both engines (SQLite keeps them as fixed-width text).
func TestTimestampOrder(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		times := []time.Time{base, base.Add(time.Microsecond), base.Add(500 * time.Millisecond), base.Add(time.Second), base.Add(10 * time.Hour)}
		m, _ := store.NewMerchants(db).Create(ctx, "T", "t@example.td", "correct horse battery", base)
		keys := store.NewAPIKeys(db)
		for i := len(times) - 1; i >= 0; i-- {
			if _, _, err := keys.Create(ctx, m.ID, times[i].In(time.FixedZone("WAT", 3600))); err != nil {
				t.Fatal(err)
			}
		}
		ks, err := keys.List(ctx, m.ID) // ordered by created_at
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range ks {
			if !k.CreatedAt.Equal(times[i]) || k.CreatedAt.Location() != time.UTC {
				t.Errorf("key %d created_at %v, want %v in UTC", i, k.CreatedAt, times[i])
			}
		}
		var n int
		db.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE created_at > $1`, db.Time(base.Add(400*time.Millisecond))).Scan(&n)
		if n != 3 {
			t.Errorf("%d keys after base+400ms, want 3", n)
		}
	})
}

func TestUniqueViolation(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		ctx := t.Context()
		m, _ := store.NewMerchants(db).Create(ctx, "U", "u@example.td", "correct horse battery", time.Now())
		_, err := db.ExecContext(ctx, `INSERT INTO merchants (id, name, email, password_hash, created_at) VALUES ($1, 'x', $2, 'x', $3)`,
			"00000000-0000-4000-8000-000000000001", m.Email, db.Time(time.Now()))
		if !store.IsUniqueViolation(err, "email") || store.IsUniqueViolation(err, "reference") {
			t.Errorf("not recognised as a unique violation on email: %v", err)
		}
		if store.IsUniqueViolation(sql.ErrNoRows, "email") {
			t.Error("any error is a unique violation")
		}
	})
}
