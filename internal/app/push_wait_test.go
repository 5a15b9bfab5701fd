package app_test

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testdb"
)

// TestRetryAfterRefusedPushIsTimedFromItsOwnPush: a merchant retries a
// reference while the first request's push is slow and then refused. The
// retry waits, finds the reference free and sends its own push, which is
// slow too; a third request waiting for that push must time it from when
// it was sent, not from when the retry arrived. Timed from the retry's
// arrival, the third request judged the second push "taken" while it was
// still waiting for Airtel, and the retry was answered 201 PENDING for a
// push Airtel then refused: a payer never asked, a TIMEOUT to come.
func TestRetryAfterRefusedPushIsTimedFromItsOwnPush(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		gate := make(chan struct{})
		var pushes atomic.Int64
		_, env := fakeAirtel(t, clk, func(sim http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/merchant/v1/payments/" {
					sim.ServeHTTP(w, r)
					return
				}
				pushes.Add(1)
				<-gate // held until the test lets it answer
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"status":{"code":"200","message":"Failed","result_code":"ESB000011","success":false}}`)
			})
		})
		a := openLive(t, testdb.URL(t, engine), clk, env)
		merchant := liveMerchant(t, a, clk)
		create := func() <-chan error {
			done := make(chan error, 1)
			go func() {
				_, err := a.Payments.Initiate(t.Context(), merchant, payment.CreateRequest{
					Reference: "retried", Amount: 5000, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23566000001",
				})
				done <- err
			}()
			return done
		}
		waitPushes := func(n int64) {
			t.Helper()
			for deadline := time.Now().Add(10 * time.Second); pushes.Load() < n; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d pushes reached Airtel, want %d", pushes.Load(), n)
				}
			}
		}
		unavailable := func(name string, err error) {
			t.Helper()
			if e, ok := errors.AsType[*payment.Error](err); !ok || e.Code != payment.EUNAVAILABLE {
				t.Errorf("%s: got %v, want a 503: Airtel refused its push", name, err)
			}
		}

		first := create()
		waitPushes(1)
		retry := create()                  // waits for the first push...
		time.Sleep(200 * time.Millisecond) // ...from now, before the clock moves
		clk.Advance(10 * time.Second)
		gate <- struct{}{} // the first push is refused
		unavailable("first request", <-first)
		waitPushes(2) // the retry's own push, held
		third := create()
		clk.Advance(11 * time.Second) // 21 s after the retry arrived, 11 s after its push left
		time.Sleep(100 * time.Millisecond)
		close(gate) // every push from now on is refused
		unavailable("retry", <-retry)
		unavailable("third request", <-third)
		page, err := a.Payments.List(t.Context(), merchant, payment.ListFilter{Page: 1, PerPage: 20})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 0 {
			t.Errorf("every push was refused, yet the list holds %d (%v)", page.Total, err)
		}
	})
}
