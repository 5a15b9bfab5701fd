package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// No test here connects anywhere but loopback: the live-mode checks are
// exercised against local httptest servers (which they must refuse) and, for
// public addresses, by calling IsPublicAddr and refuseNonPublic directly.

func TestValidateURL(t *testing.T) {
	t.Parallel()
	long := "https://example.com/" + strings.Repeat("a", MaxURLLength-len("https://example.com/"))
	tests := []struct {
		raw        string
		liveErr    string // substring of the live-mode error; "" means accepted
		sandboxErr string // same for sandbox mode
	}{
		{"https://example.com", "", ""},
		{"https://example.com/hook", "", ""},
		{"https://example.com:8443/hook?merchant=42", "", ""},
		{"HTTPS://Example.COM/hook", "", ""},
		{"https://8.8.8.8/hook", "", ""},
		{"https://[2606:4700:4700::1111]/hook", "", ""},
		{long, "", ""},

		{"http://example.com/hook", "https", ""},
		{"http://127.0.0.1:8080/hook", "https", ""},
		{"http://localhost:3000/webhooks", "https", ""},
		{"https://127.0.0.1/hook", "private, loopback", ""},
		{"https://10.0.0.1/", "private, loopback", "private or link-local"},
		{"https://192.168.1.20/", "private, loopback", "private or link-local"},
		{"https://[::1]/", "private, loopback", ""},
		{"https://[::ffff:127.0.0.1]/", "private, loopback", ""},
		{"https://[fe80::1%25eth0]/", "private, loopback", "private or link-local"},
		{"https://169.254.169.254/latest/meta-data", "private, loopback", "private or link-local"},
		{"http://169.254.169.254/latest/meta-data", "https", "private or link-local"},
		{"http://10.255.255.53:53/x", "https", "private or link-local"},
		{"http://[fd00::1]/x", "https", "private or link-local"},
		{"https://100.64.0.1/", "private, loopback", "private or link-local"},
		{"https://0.0.0.0/", "private, loopback", "private or link-local"},
		{"https://2130706433/", "numeric", "numeric"},
		{"https://0x7f.1/", "numeric", "numeric"},
		{"https://10.1/", "numeric", "numeric"},
		{"https://0/", "numeric", "numeric"},
		{"https://hooks.example.0x/", "numeric", "numeric"},
		{"https://1.example.com/hook", "", ""},
		{"https://0xcafe.example/hook", "", ""},
		{"https://localhost/hook", "localhost", ""},
		{"https://LOCALHOST./hook", "localhost", ""},
		{"https://api.localhost/hook", "localhost", ""},

		// Host names are judged as a delivery resolves them (IDNA): these
		// are 127.0.0.1, 169.254.169.254 and localhost.
		{"https://１２７.０.０.１/", "private, loopback", ""},
		{"https://127。0。0。1/", "private, loopback", ""},
		{"https://①⑥⑨.②⑤④.①⑥⑨.②⑤④/", "private, loopback", "private or link-local"},
		{"http://①⑥⑨.②⑤④.①⑥⑨.②⑤④/", "https", "private or link-local"},
		{"https://ＬＯＣＡＬＨＯＳＴ/", "localhost", ""},
		{"https://１０.１/", "numeric", "numeric"},
		{"https://bücher.example/hook", "", ""},

		// Not text, or with control characters (PostgreSQL refused the
		// first with a 500 before it was checked here).
		{"https://example.com/\xff", "not a valid URL", "not a valid URL"},
		{"https://example.com/?q=\xc0\xaf", "not a valid URL", "not a valid URL"},
		{"https://\xff.example/", "not a valid URL", "not a valid URL"},
		{"https://example.com/a\x00b", "not a valid URL", "not a valid URL"},
		{"https://example.com/a\x7fb", "not a valid URL", "not a valid URL"},

		{"", "required", "required"},
		{"   ", "required", "required"},
		{"ftp://example.com/hook", "https", "http:// or https://"},
		{"javascript:alert(1)", "https", "http:// or https://"},
		{"/hook", "https", "http:// or https://"},
		{"example.com/hook", "https", "http:// or https://"},
		{"//example.com/hook", "https", "http:// or https://"},
		{"https://", "host", "host"},
		{"https:example.com", "host", "host"},
		{"https://:443/hook", "host", "host"},
		{"https://user:secret@example.com/hook", "user name", "user name"},
		{"https://user@example.com/hook", "user name", "user name"},
		{"http://user:pw@127.0.0.1/hook", "https", "user name"},
		{"https://example.com:0/", "port", "port"},
		{"https://example.com:65536/", "port", "port"},
		{"https://exa mple.com/", "not a valid URL", "not a valid URL"},
		{"https://example.com/\n", "not a valid URL", "not a valid URL"},
		{long + "a", "at most 2048", "at most 2048"},
	}
	for _, tt := range tests {
		for _, mode := range []struct {
			live bool
			want string
		}{{true, tt.liveErr}, {false, tt.sandboxErr}} {
			err := ValidateURL(tt.raw, mode.live)
			name := tt.raw
			if len(name) > 60 {
				name = name[:60] + "…"
			}
			switch {
			case mode.want == "" && err != nil:
				t.Errorf("ValidateURL(%q, live=%v) = %v, want nil", name, mode.live, err)
			case mode.want != "" && err == nil:
				t.Errorf("ValidateURL(%q, live=%v) = nil, want error containing %q", name, mode.live, mode.want)
			case err != nil && !strings.Contains(err.Error(), mode.want):
				t.Errorf("ValidateURL(%q, live=%v) = %q, want it to contain %q", name, mode.live, err, mode.want)
			case err != nil && !strings.HasPrefix(err.Error(), "webhook URL "):
				// Shown to merchants: plain wording, no Go package prefixes or parser internals.
				t.Errorf("ValidateURL(%q, live=%v) = %q, want a merchant-facing message", name, mode.live, err)
			}
		}
	}
}

func TestIsPublicAddr(t *testing.T) {
	t.Parallel()
	public := []string{
		"8.8.8.8", "1.1.1.1", "11.0.0.1", "172.15.255.255", "172.32.0.1", "100.63.255.255",
		"100.128.0.1", "169.253.255.255", "223.255.255.254", "::ffff:8.8.8.8",
		"2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001::1",
	}
	nonPublic := []string{
		// IPv4: this network, loopback, private, link-local (cloud metadata), CGNAT,
		// IETF, documentation, 6to4 relay, benchmarking, multicast, reserved, broadcast.
		"0.0.0.0", "0.1.2.3", "127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255",
		"172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.0.1",
		"100.64.0.1", "100.127.255.255", "192.0.0.8", "192.0.2.1", "192.88.99.1",
		"198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9", "224.0.0.1",
		"239.255.255.250", "240.0.0.1", "255.255.255.255",
		// IPv6: unspecified, loopback, IPv4-compatible and -mapped forms, NAT64,
		// discard, Teredo, documentation, 6to4, ULA, site-local, link-local, multicast.
		"::", "::1", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
		"::ffff:169.254.169.254", "::ffff:100.64.0.1", "::ffff:0.0.0.0", "64:ff9b::a00:1",
		"100::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:db8::1",
		"2002:a00:1::1", "3fff::1", "fc00::1", "fd00::2", "fec0::1", "fe80::1",
		"fe80::1%eth0", "ff02::1", "ff0e::1",
	}
	for _, want := range []bool{true, false} {
		list := public
		if !want {
			list = nonPublic
		}
		for _, s := range list {
			if got := IsPublicAddr(netip.MustParseAddr(s)); got != want {
				t.Errorf("IsPublicAddr(%s) = %v, want %v", s, got, want)
			}
		}
	}
	if IsPublicAddr(netip.Addr{}) {
		t.Error("IsPublicAddr(zero Addr) = true, want false")
	}
}

// TestRefuseNonPublic calls the live dialer's hook without opening sockets,
// which is how the public side of the check is tested on a closed network.
func TestRefuseNonPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		network, address string
		allowed          bool
	}{
		{"tcp4", "8.8.8.8:443", true},
		{"tcp6", "[2606:4700:4700::1111]:443", true},
		{"tcp4", "127.0.0.1:443", false},
		{"tcp4", "169.254.169.254:80", false},
		{"tcp6", "[::1]:443", false},
		{"tcp6", "[::ffff:10.0.0.1]:443", false},
		{"tcp6", "[fe80::1%eth0]:443", false},
		{"tcp", "not-an-address", false},
		{"tcp", "example.com:443", false},
	}
	for _, tt := range tests {
		err := newDialGuard(true, nil).control(tt.network, tt.address, nil)
		if tt.allowed && err != nil {
			t.Errorf("live dial check of %s = %v, want nil", tt.address, err)
		}
		if !tt.allowed && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("live dial check of %s = %v, want ErrForbiddenAddress", tt.address, err)
		}
	}
}

// TestRefuseNonLocal: the sandbox's dialer reaches public and loopback
// addresses only.
func TestRefuseNonLocal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		address string
		allowed bool
	}{
		{"8.8.8.8:443", true},
		{"127.0.0.1:8080", true},
		{"[::1]:8080", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{"169.254.169.254:80", false},
		{"10.255.255.53:53", false},
		{"192.168.1.20:80", false},
		{"[fd00::1]:80", false},
		{"[fe80::1%eth0]:443", false},
		{"0.0.0.0:80", false},
		{"not-an-address", false},
	}
	for _, tt := range tests {
		err := newDialGuard(false, nil).control("tcp", tt.address, nil)
		if tt.allowed && err != nil {
			t.Errorf("sandbox dial check of %s = %v, want nil", tt.address, err)
		}
		if !tt.allowed && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("sandbox dial check of %s = %v, want ErrForbiddenAddress", tt.address, err)
		}
	}
}

// countingServer starts a loopback receiver that answers 204 and counts hits.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// viaLocalhost rewrites a server URL to use the name "localhost", so the
// address is only known after DNS resolution.
func viaLocalhost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort("localhost", u.Port())
	return u.String()
}

func TestHTTPClientDialCheck(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t)
	tests := []struct {
		name    string
		live    bool
		url     string
		refused bool
	}{
		{"live refuses loopback IP", true, srv.URL, true},
		{"live refuses name resolving to loopback", true, viaLocalhost(t, srv.URL), true},
		{"sandbox reaches loopback IP", false, srv.URL, false},
		{"sandbox reaches localhost", false, viaLocalhost(t, srv.URL), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			client := NewHTTPClient(tt.live, 5*time.Second)
			resp, err := client.Post(tt.url, "application/json", strings.NewReader(`{}`))
			if tt.refused {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("POST %s: got %s, want ErrForbiddenAddress", tt.url, resp.Status)
				}
				if !errors.Is(err, ErrForbiddenAddress) {
					t.Fatalf("POST %s: error %v does not wrap ErrForbiddenAddress", tt.url, err)
				}
				if got := hits.Load() - before; got != 0 {
					t.Fatalf("receiver saw %d requests, want 0", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("POST %s: %v", tt.url, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("POST %s: status %d, want 204", tt.url, resp.StatusCode)
			}
			if got := hits.Load() - before; got != 1 {
				t.Fatalf("receiver saw %d requests, want 1", got)
			}
		})
	}
}

// TestHTTPClientRefusesOwnListeners: a delivery never connects to the
// process's own listeners (the admin listener's /debug/pprof, answered
// to any method, showed a shared sandbox's command line in a test event's
// excerpt), on loopback or on this machine's other addresses, while other
// loopback receivers stay reachable in the sandbox.
func TestHTTPClientRefusesOwnListeners(t *testing.T) {
	t.Parallel()
	admin, adminHits := countingServer(t)
	receiver, receiverHits := countingServer(t)
	own := netip.MustParseAddrPort(admin.Listener.Addr().String())
	client := NewHTTPClient(false, 5*time.Second, own)
	for _, u := range []string{admin.URL, viaLocalhost(t, admin.URL), "http://[::1]:" + strconv.Itoa(int(own.Port()))} {
		resp, err := client.Post(u, "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			t.Errorf("POST %s: %s, want refused", u, resp.Status)
		} else if !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("POST %s: %v, want ErrForbiddenAddress", u, err)
		}
	}
	if n := adminHits.Load(); n != 0 {
		t.Errorf("the own listener saw %d requests", n)
	}
	resp, err := client.Post(receiver.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("another loopback receiver: %v", err)
	}
	resp.Body.Close()
	if receiverHits.Load() != 1 {
		t.Error("another loopback receiver was not reached")
	}
	// A listener on every interface is refused on this machine's own
	// addresses, not only on loopback; elsewhere its port is anyone's.
	g := newDialGuard(true, []netip.AddrPort{netip.AddrPortFrom(netip.IPv6Unspecified(), 9090)})
	g.localAddr[netip.MustParseAddr("8.8.4.4")] = true // as if it were this machine's public address
	if err := g.control("tcp4", "8.8.4.4:9090", nil); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("own public address, own port: %v, want refused", err)
	}
	if err := g.control("tcp4", "8.8.8.8:9090", nil); err != nil {
		t.Errorf("another host's port 9090: %v, want allowed", err)
	}
	if err := g.control("tcp4", "8.8.4.4:443", nil); err != nil {
		t.Errorf("own public address, another port: %v, want allowed", err)
	}
}

func TestHTTPClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target, targetHits := countingServer(t)
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			t.Parallel()
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/elsewhere", code)
			}))
			defer redirector.Close()

			resp, err := NewHTTPClient(false, 5*time.Second).Post(redirector.URL, "application/json", strings.NewReader(`{}`))
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != code {
				t.Fatalf("status %d, want %d returned as the answer", resp.StatusCode, code)
			}
			if loc := resp.Header.Get("Location"); loc != target.URL+"/elsewhere" {
				t.Fatalf("Location = %q, want %q", loc, target.URL+"/elsewhere")
			}
		})
	}
	t.Cleanup(func() {
		if n := targetHits.Load(); n != 0 {
			t.Errorf("redirect target saw %d requests, want 0", n)
		}
	})
}

func TestHTTPClientTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // runs first: unblocks the handler before Close waits for it

	start := time.Now()
	resp, err := NewHTTPClient(false, 100*time.Millisecond).Post(slow.URL, "application/json", strings.NewReader(`{}`))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got %s from a receiver slower than the timeout, want an error", resp.Status)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("error %v is not a timeout", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("request took %v, timeout was 100ms", elapsed)
	}
}

func TestHTTPClientTransport(t *testing.T) {
	t.Parallel()
	for _, live := range []bool{true, false} {
		c := NewHTTPClient(live, 10*time.Second)
		if c.Timeout != 10*time.Second {
			t.Errorf("live=%v: Timeout = %v, want 10s", live, c.Timeout)
		}
		tr, ok := c.Transport.(*http.Transport)
		if !ok {
			t.Fatalf("live=%v: Transport is %T, want *http.Transport", live, c.Transport)
		}
		if tr == http.DefaultTransport {
			t.Errorf("live=%v: shares http.DefaultTransport", live)
		}
		// A proxy from the environment would make the dial check judge the
		// proxy's address instead of the receiver's.
		if tr.Proxy != nil {
			t.Errorf("live=%v: Proxy is set, want nil", live)
		}
		if err := c.CheckRedirect(nil, nil); !errors.Is(err, http.ErrUseLastResponse) {
			t.Errorf("live=%v: CheckRedirect = %v, want http.ErrUseLastResponse", live, err)
		}
	}
}

// TestHTTPClientBoundsAnswerHeaders: a receiver that answers with
// megabytes of headers fails the attempt once past maxAnswerHeaderBytes;
// ordinary headers pass. Before, Go's 10 MiB default let each attempt hold
// about that much of the server's memory.
func TestHTTPClientBoundsAnswerHeaders(t *testing.T) {
	t.Parallel()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lines := 0
		if r.URL.Path == "/huge" {
			lines = 2000 // 2 MB of headers
		}
		for i := range lines {
			w.Header().Set(fmt.Sprintf("X-Filler-%d", i), strings.Repeat("a", 1000))
		}
		w.Header().Set("X-Small", "ok")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(receiver.Close)
	c := NewHTTPClient(false, 5*time.Second)
	resp, err := c.Post(receiver.URL+"/small", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatalf("ordinary headers: %v", err)
	}
	resp.Body.Close()
	if resp, err := c.Post(receiver.URL+"/huge", "application/json", strings.NewReader(`{}`)); err == nil {
		resp.Body.Close()
		t.Fatalf("2 MB of answer headers read whole (%d headers)", len(resp.Header))
	} else if !strings.Contains(err.Error(), "headers exceeded") {
		t.Fatalf("2 MB of answer headers: %v", err)
	}
}
