package store_test

import (
	"os"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
)

func BenchmarkZZSeed(b *testing.B) {
	url := os.Getenv("ZZ_DB")
	db, err := store.Open(b.Context(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(b.Context()); err != nil {
		b.Fatal(err)
	}
	id := seedList(b, db, time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC), 100_000)
	os.WriteFile(os.Getenv("ZZ_OUT"), []byte(id), 0o644)
}
