package app_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/testdb"
)

// TestInstancesStartTogether starts four instances at once on a new
// PostgreSQL database, as a deployment of several instances (or a rolling
// upgrade that brings migrations) does: every one starts, exactly one
// applies the migrations, and all end at the same schema version. Without
// the schema lock they ran the first migration side by side and failed.
func TestInstancesStartTogether(t *testing.T) {
	t.Parallel()
	for range 3 {
		db := testdb.URL(t, "postgres")
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			appliers int
			versions = map[int64]bool{}
		)
		for i := range 4 {
			wg.Go(func() {
				a, err := app.Open(context.Background(), app.Config{DatabaseURL: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Errorf("instance %d did not start: %v", i, err)
					return
				}
				defer a.Close()
				mu.Lock()
				defer mu.Unlock()
				if a.Schema.Applied > 0 {
					appliers++
				}
				versions[a.Schema.Version] = true
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		if appliers != 1 || len(versions) != 1 {
			t.Fatalf("%d instances applied migrations, schema versions seen %v: want one, and one version", appliers, versions)
		}
	}
}
