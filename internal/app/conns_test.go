package app

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"
)

// TestConnectionBounds: over real sockets, a client past its share of
// connections, or anyone past the total, is closed at once while the
// connections already open keep being served; a closed connection frees
// its place; a trusted proxy is held to the total only.
func TestConnectionBounds(t *testing.T) {
	for _, tc := range []struct {
		name             string
		total, perClient int
		trusted          []netip.Prefix
		served           int // of 4 connections from 127.0.0.1
	}{
		{"per client", 10, 2, nil, 2},
		{"in all", 3, 10, nil, 3},
		{"trusted proxy", 3, 1, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			limited := &connLimit{Listener: ln, total: tc.total, perClient: tc.perClient, trusted: tc.trusted, by: map[string]int{}}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
			go srv.Serve(limited)
			t.Cleanup(func() { srv.Close() })

			// served tells whether conn gets an answer to a request.
			served := func(c net.Conn) bool {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					return false
				}
				buf := make([]byte, 12)
				_, err := io.ReadFull(c, buf)
				return err == nil && string(buf) == "HTTP/1.1 200"
			}
			var conns []net.Conn
			for range 4 {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				conns = append(conns, c)
			}
			got := 0
			for i, c := range conns {
				if served(c) {
					got++
				} else if i < tc.served {
					t.Errorf("connection %d within the bounds was not served", i)
				}
			}
			if got != tc.served {
				t.Fatalf("%d of 4 connections served, want %d", got, tc.served)
			}
			// The refused ones were closed, not left hanging.
			buf := make([]byte, 1)
			if _, err := conns[3].Read(buf); err == nil || isTimeout(err) {
				t.Errorf("a connection past the bounds: read %v, want it closed (EOF or reset)", err)
			}
			// A closed connection frees its place for a new one.
			conns[0].Close()
			deadline := time.Now().Add(5 * time.Second)
			for {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				ok := served(c)
				c.Close()
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no place came free after a connection closed")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// isTimeout reports a read that waited for its deadline: the connection
// was left open.
func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}
