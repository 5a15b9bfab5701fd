package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment/paymenttest"
	"github.com/momopay/momopay/internal/store"
)

// TestStoreConformance holds the transaction store to every clause of
// payment.Store's doc comments (paymenttest.RunStore), on SQLite and on
// PostgreSQL. One store serves each engine's suite, as one serves the
// service; each fixture brings two new merchants, so that each starts
// with an empty history.
func TestStoreConformance(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *store.DB) {
		txs, _ := newTransactions(t, db)
		paymenttest.RunStore(t, func(t *testing.T) paymenttest.Fixture {
			return paymenttest.Fixture{Store: txs, Merchant: newMerchant(t, db), Other: newMerchant(t, db)}
		})
	})
}

// newMerchant creates a merchant of db and returns its id.
func newMerchant(t *testing.T, db *store.DB) string {
	t.Helper()
	m, err := store.NewMerchants(db).Create(t.Context(), "Shop", uuid.NewString()+"@example.td", "correct horse battery", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}
