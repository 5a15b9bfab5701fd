package operatorhttp_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator/operatorhttp"
)

// TestConnectionsAreReused: rounds of concurrent calls to one operator
// reuse the connections of the first round instead of opening new ones
// (net/http's default transport keeps 2 per host, so each round of 32
// opened about 30 more).
func TestConnectionsAreReused(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond) // long enough for the round's calls to overlap
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	client := operatorhttp.Client(5 * time.Second)
	const calls, rounds = 32, 4
	for range rounds {
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			})
		}
		wg.Wait()
	}
	if n := opened.Load(); n > calls+calls/2 {
		t.Errorf("%d rounds of %d concurrent calls opened %d connections, want about %d", rounds, calls, n, calls)
	}
}

// TestRedirectsAreNotFollowed: a 3xx comes back as the answer, and the
// host it names never sees the request (whose body holds credentials).
func TestRedirectsAreNotFollowed(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/token", code)
		}))
		resp, err := operatorhttp.Client(5*time.Second).Post(srv.URL, "application/json", strings.NewReader(`{"client_secret":"s"}`))
		srv.Close()
		if err != nil {
			t.Fatalf("%d: %v", code, err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("%d: got HTTP %d, want the redirect itself", code, resp.StatusCode)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", n)
	}
}
