package dashboard_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testserver"
)

var floodFlooders = flag.Int("signin.flooders", 8, "BenchmarkSignInDuringAFlood's flooding addresses")

// BenchmarkSignInDuringAFlood times a correct sign-in from one address
// while -signin.flooders other addresses each send 30 wrong sign-ins at
// once (as many as their throttle lets through), with passwords hashed at
// bcrypt's default cost as in production. It reports the median and 95th
// percentile of the correct sign-in (p50-ms, p95-ms). The server is told
// its clients' addresses by X-Forwarded-For from a trusted proxy, and its
// clock moves an hour between rounds so that every throttle is full again.
//
//	go test -run '^$' -bench SignInDuringAFlood -benchtime 10x ./internal/dashboard
func BenchmarkSignInDuringAFlood(b *testing.B) {
	defer func(cost int) { store.PasswordCost = cost }(store.PasswordCost)
	store.PasswordCost = bcrypt.DefaultCost
	clock := testserver.NewClock(time.Now())
	s := testserver.Start(b, testserver.Options{Now: clock.Now, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	users, _ := s.App.Users.List(context.Background(), s.MerchantID)
	owner := users[0].Email // the only user yet
	// The flood guesses at existing accounts (each lets 10 tries through),
	// so that every try costs a real comparison.
	const perFlooder = 30
	accounts := (*floodFlooders*perFlooder + 9) / 10
	emails := make([]string, accounts)
	for i := range emails {
		emails[i] = fmt.Sprintf("target%d@example.com", i)
		if _, err := s.App.Users.Add(context.Background(), s.MerchantID, emails[i], team.Viewer, password, clock.Now()); err != nil {
			b.Fatal(err)
		}
	}
	signIn := func(from, email, pw string) int {
		req, _ := http.NewRequest("POST", s.URL+"/auth/login", strings.NewReader(`{"email":"`+email+`","password":"`+pw+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", from)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		clock.Advance(time.Hour)
		var flood sync.WaitGroup
		for f := range *floodFlooders {
			for i := range perFlooder {
				email := emails[(f*perFlooder+i)%accounts]
				flood.Go(func() { signIn(fmt.Sprintf("198.51.100.%d", f+1), email, "wrong password!") })
			}
		}
		time.Sleep(50 * time.Millisecond) // the flood's requests are in
		start := time.Now()
		if code := signIn("203.0.113.1", owner, password); code != http.StatusOK {
			b.Fatalf("the correct sign-in during the flood: %d", code)
		}
		times = append(times, time.Since(start))
		flood.Wait()
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[min(len(times)-1, len(times)*95/100)].Microseconds())/1000, "p95-ms")
}
