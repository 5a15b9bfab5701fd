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

var (
	floodFlooders = flag.Int("signin.flooders", 8, "BenchmarkSignInDuringAFlood's flooding addresses")
	floodOwn      = flag.Bool("signin.own", false, "BenchmarkSignInDuringAFlood's flood signs in correctly to the attacker's own account, each address with a device cookie of its own")
)

// BenchmarkSignInDuringAFlood times two correct sign-ins of the owner
// while -signin.flooders other addresses each send 30 wrong sign-ins at
// once (as many as their throttle lets through), with passwords hashed at
// bcrypt's default cost as in production: one from a browser that never
// signed in (new-p50-ms, new-p95-ms) and one from a browser that did and
// sends its device cookie (known-p50-ms, known-p95-ms), each from an
// address of its own. The server is told its clients' addresses by
// X-Forwarded-For from a trusted proxy, and its clock moves an hour
// between rounds so that every throttle is full again. With
// -signin.own the flood is instead correct sign-ins to one account of the
// attacker's own, each address with a device cookie of its own, as
// someone with an account can do: they are never throttled, and go ahead
// of new browsers' sign-ins.
//
//	go test -run '^$' -bench SignInDuringAFlood -benchtime 10x ./internal/dashboard [-args -signin.flooders=40]
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
	merchant := s.MerchantID
	for i := range emails {
		if i > 0 && i%(team.MaxUsers-1) == 0 { // a team is bounded: the next targets are another merchant's
			m, err := s.App.Merchants.Create(context.Background(), "Targets", fmt.Sprintf("targets%d@example.com", i), password, clock.Now())
			if err != nil {
				b.Fatal(err)
			}
			merchant = m.ID
		}
		emails[i] = fmt.Sprintf("target%d@example.com", i)
		if _, err := s.App.Users.Add(context.Background(), merchant, emails[i], team.Viewer, password, clock.Now()); err != nil {
			b.Fatal(err)
		}
	}
	flooder := func(f int) string { return fmt.Sprintf("198.51.%d.%d", 100+f/250, f%250+1) }
	// signIn signs in from address with device (a device cookie, or "")
	// and returns the status and the device cookie set, if any.
	signIn := func(from, email, pw, device string) (int, string) {
		req, _ := http.NewRequest("POST", s.URL+"/auth/login", strings.NewReader(`{"email":"`+email+`","password":"`+pw+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", from)
		if device != "" {
			req.AddCookie(&http.Cookie{Name: "momopay_device", Value: device})
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Error(err)
			return 0, ""
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == "momopay_device" {
				return resp.StatusCode, c.Value
			}
		}
		return resp.StatusCode, ""
	}
	_, device := signIn("203.0.113.2", owner, password, "")
	if device == "" {
		b.Fatal("no device cookie after a sign-in")
	}
	// floodDevices[f] is flooder f's device cookie for the attacker's
	// account (emails[0]), with -signin.own.
	floodDevices := make([]string, *floodFlooders)
	if *floodOwn {
		for f := range floodDevices {
			if _, floodDevices[f] = signIn(flooder(f), emails[0], password, ""); floodDevices[f] == "" {
				b.Fatal("no device cookie for the attacker's account")
			}
		}
	}
	var fresh, known []time.Duration
	for b.Loop() {
		clock.Advance(time.Hour)
		var flood sync.WaitGroup
		for f := range *floodFlooders {
			for i := range perFlooder {
				email := emails[(f*perFlooder+i)%accounts]
				if *floodOwn {
					flood.Go(func() { signIn(flooder(f), emails[0], password, floodDevices[f]) })
				} else {
					flood.Go(func() { signIn(flooder(f), email, "wrong password!", "") })
				}
			}
		}
		time.Sleep(50 * time.Millisecond) // the flood's requests are in
		var both sync.WaitGroup
		for _, c := range []struct {
			from, device string
			times        *[]time.Duration
		}{{"203.0.113.1", "", &fresh}, {"203.0.113.2", device, &known}} {
			both.Go(func() {
				start := time.Now()
				if code, _ := signIn(c.from, owner, password, c.device); code != http.StatusOK {
					b.Errorf("the correct sign-in during the flood (device cookie %v): %d", c.device != "", code)
				}
				*c.times = append(*c.times, time.Since(start))
			})
		}
		both.Wait()
		flood.Wait()
	}
	for _, m := range []struct {
		name  string
		times []time.Duration
	}{{"new", fresh}, {"known", known}} {
		slices.Sort(m.times)
		b.ReportMetric(float64(m.times[len(m.times)/2].Microseconds())/1000, m.name+"-p50-ms")
		b.ReportMetric(float64(m.times[min(len(m.times)-1, len(m.times)*95/100)].Microseconds())/1000, m.name+"-p95-ms")
	}
}
