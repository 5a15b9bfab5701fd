package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
)

// TestUnverifiedCallbacksAreBounded: without a callback secret, anyone can
// send an Airtel callback naming a payment, and each is a hint that makes
// the service ask Airtel. Fifty hints about one payment heard at once make
// one enquiry, as do any more within the next 10 s, and hints about many
// payments never hold more than a bounded number of enquiries at once,
// however slow Airtel is to answer. Before, 300 such callbacks held 300
// connections to Airtel and 1,246 goroutines.
func TestUnverifiedCallbacksAreBounded(t *testing.T) {
	t.Parallel()
	clk := liveClock()
	gate := make(chan struct{})
	var asked, inFlight, most atomic.Int64
	var perRef sync.Map // internal_ref -> *atomic.Int64
	_, env := fakeAirtel(t, clk, func(sim http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ref, enquiry := strings.CutPrefix(r.URL.Path, "/standard/v1/payments/")
			if !enquiry || r.Method != http.MethodGet {
				sim.ServeHTTP(w, r)
				return
			}
			asked.Add(1)
			n, _ := perRef.LoadOrStore(ref, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			now := inFlight.Add(1)
			for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
			}
			<-gate // Airtel is slow to answer
			inFlight.Add(-1)
			sim.ServeHTTP(w, r)
		})
	})
	a := openLive(t, testdb.URL(t, "sqlite"), clk, env)
	merchant := liveMerchant(t, a, clk)
	var refs []string
	for i := range 40 {
		tx, err := a.Payments.Initiate(t.Context(), merchant, payment.CreateRequest{
			Reference: fmt.Sprintf("hinted-%d", i), Amount: 5000, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23566000001",
		})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, tx.InternalRef)
	}

	var wg sync.WaitGroup
	hint := func(ref string) {
		wg.Go(func() {
			cb := operator.Callback{Ref: ref, Unverified: true, Outcome: operator.Outcome{State: operator.Succeeded}}
			if err := a.Payments.HandleCallback(t.Context(), payment.OperatorAirtel, cb); err != nil {
				t.Errorf("hint about %s: %v", ref, err)
			}
		})
	}
	for range 50 {
		hint(refs[0])
	}
	for _, ref := range refs[1:] {
		hint(ref)
	}
	// Let every hint reach Airtel that is going to, while none is answered.
	for deadline := time.Now().Add(10 * time.Second); asked.Load() < 16 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	close(gate)
	wg.Wait()

	if n, _ := perRef.Load(refs[0]); n == nil || n.(*atomic.Int64).Load() != 1 {
		t.Errorf("50 hints about one payment, heard at once, made %v enquiries, want 1", n)
	}
	if m := most.Load(); m > 16 {
		t.Errorf("%d enquiries were in flight at once, want at most 16", m)
	}
	if asked.Load() < 16 {
		t.Errorf("only %d enquiries were made for hints about 40 payments; the bound is 16", asked.Load())
	}
	// Later hints about a payment asked about less than 10 s ago make no
	// enquiry (before, each sent one after another made its own); past
	// that, one does.
	count := func() int64 { n, _ := perRef.Load(refs[0]); return n.(*atomic.Int64).Load() }
	for range 20 {
		hint(refs[0])
		wg.Wait()
	}
	if n := count(); n != 1 {
		t.Errorf("20 more hints about one payment within 10 s made %d enquiries in all, want still 1", n)
	}
	clk.Advance(11 * time.Second)
	hint(refs[0])
	wg.Wait()
	if n := count(); n != 2 {
		t.Errorf("a hint 11 s later: %d enquiries in all, want 2", n)
	}
	// Nothing was settled by the hints' own word: Airtel says in progress.
	for _, ref := range refs[:3] {
		tx, err := a.Transactions.TransactionByInternalRef(t.Context(), ref)
		if err != nil || tx.Status != payment.StatusPending {
			t.Errorf("%s: %v %v, want PENDING", ref, tx, err)
		}
	}
}

// TestUnverifiedCallbackSettlesByTheEnquiry: without a callback secret,
// Airtel's own callbacks are hints too; the enquiry one makes settles the
// payment by Airtel's answer, whatever the callback said.
func TestUnverifiedCallbackSettlesByTheEnquiry(t *testing.T) {
	t.Parallel()
	clk := liveClock()
	_, env := fakeAirtel(t, clk, nil)
	a := openLive(t, testdb.URL(t, "sqlite"), clk, env)
	merchant := liveMerchant(t, a, clk)
	tx, err := a.Payments.Initiate(t.Context(), merchant, payment.CreateRequest{
		Reference: "hinted", Amount: 5000, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23560000006", // confirms; its callback is lost
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Second) // the payer has confirmed
	cb := operator.Callback{Ref: tx.InternalRef, Unverified: true, Outcome: operator.Outcome{State: operator.Failed}}
	if err := a.Payments.HandleCallback(t.Context(), payment.OperatorAirtel, cb); err != nil {
		t.Fatal(err)
	}
	got, err := a.Transactions.Transaction(t.Context(), merchant, tx.ID)
	if err != nil || got.Status != payment.StatusSuccess {
		t.Errorf("after a hint saying FAILED about a payment Airtel says was paid: %v %v, want SUCCESS", got, err)
	}
	// A hint about no payment is answered as one about a payment (it used
	// to be 404 against 200: a probe of which internal_refs exist).
	for _, ref := range []string{"SERVICE-NOSUCH00", "SERVICE-\x00", "no ref at all"} {
		cb := operator.Callback{Ref: ref, Unverified: true, Outcome: operator.Outcome{State: operator.Succeeded}}
		if err := a.Payments.HandleCallback(t.Context(), payment.OperatorAirtel, cb); err != nil {
			t.Errorf("hint about %q: %v, want it taken like any other", ref, err)
		}
	}
}
