package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestKeyCacheForgetsRevokedKeys runs two instances' key stores on one
// database. On PostgreSQL each caches a live key while its revocation
// listener runs, and a revocation made by either instance ends the key on
// both; on SQLite nothing is cached, so even a revocation the store never
// saw (written by another process) is seen at once.
func TestKeyCacheForgetsRevokedKeys(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		ctx := t.Context()
		url := testdb.URL(t, engine)
		dbA, dbB := openURL(t, url), openURL(t, url)
		now := time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)
		m, err := store.NewMerchants(dbA).Create(ctx, "Shop", "shop@example.td", "correct horse battery", now)
		if err != nil {
			t.Fatal(err)
		}
		keysA, keysB := store.NewAPIKeys(dbA), store.NewAPIKeys(dbB)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		listen, stop := context.WithCancel(ctx)
		defer stop()
		go keysA.RunRevocationListener(listen, quiet)
		go keysB.RunRevocationListener(listen, quiet)
		if engine == "postgres" {
			for _, k := range []*store.APIKeys{keysA, keysB} {
				wait, cancel := context.WithTimeout(ctx, 10*time.Second)
				if err := k.WaitCacheLive(wait); err != nil {
					t.Fatal(err)
				}
				cancel()
			}
		}

		identify := func(keys *store.APIKeys, key string) string {
			t.Helper()
			_, merchant, err := keys.Identify(ctx, key, now)
			if err != nil {
				t.Fatal(err)
			}
			return merchant
		}
		// revokeBehindItsBack ends a key as a stray SQL statement would:
		// no notification, so only a lookup in the database sees it.
		revokeBehindItsBack := func(id string) {
			t.Helper()
			if _, err := dbA.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE id = $2`, dbA.Time(now), id); err != nil {
				t.Fatal(err)
			}
		}

		// A key revoked on instance A no longer works on instance B,
		// which had it cached.
		rec, key, err := keysA.Create(ctx, m.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		if got := identify(keysB, key); got != m.ID {
			t.Fatalf("a live key identifies as %q", got)
		}
		if _, err := keysA.Revoke(ctx, m.ID, rec.ID, now); err != nil {
			t.Fatal(err)
		}
		if got := identify(keysA, key); got != "" {
			t.Error("the revoking instance still accepts the key")
		}
		// Well within the cache's 10 s lifetime: only the notification
		// can end the key there this soon.
		deadline := time.Now().Add(5 * time.Second)
		for identify(keysB, key) != "" {
			if time.Now().After(deadline) {
				t.Fatal("the other instance still accepts the revoked key after 5 s")
			}
			time.Sleep(5 * time.Millisecond)
		}

		// A key changed behind the store's back shows whether lookups
		// are cached: on PostgreSQL (listener up) they are, on SQLite
		// never.
		rec2, key2, err := keysA.Create(ctx, m.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		if got := identify(keysB, key2); got != m.ID {
			t.Fatalf("a live key identifies as %q", got)
		}
		revokeBehindItsBack(rec2.ID)
		got := identify(keysB, key2)
		if engine == "postgres" && got != m.ID {
			t.Error("with its listener up, instance B did not cache the key")
		}
		if engine == "sqlite" && got != "" {
			t.Error("on SQLite a key was cached: a revocation by another process would go unseen")
		}

		if engine != "postgres" {
			return
		}
		// Once the listener stops, nothing cached is trusted.
		stop()
		deadline = time.Now().Add(5 * time.Second)
		for identify(keysB, key2) != "" {
			if time.Now().After(deadline) {
				t.Fatal("with its listener stopped, instance B still trusts its cache after 5 s")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
