package store_test

import (
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testdb"
)

// TestListenReplacesAHungConnection: a listening connection that stops
// answering without dropping (here a proxy that stops passing bytes but
// keeps both sockets open, as a stalled middlebox does) is given up
// (up(false): the caller stops trusting what it hears) and replaced once
// the way is clear again. Before, such a connection was trusted for ever:
// an instance whose revocation listener hung kept accepting a revoked API
// key until its cache entry expired.
func TestListenReplacesAHungConnection(t *testing.T) {
	target, err := url.Parse(testdb.URL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	p := startStallingProxy(t, target.Host)
	proxied := *target
	proxied.Host = p.addr
	db := openURL(t, proxied.String())

	ups := make(chan bool, 10)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	go db.Listen(t.Context(), "momopay_listen_test", "test listener", quiet, func(live bool) { ups <- live }, func(string) {})
	expect := func(want bool, within time.Duration, what string) {
		t.Helper()
		select {
		case got := <-ups:
			if got != want {
				t.Fatalf("%s: up(%v), want up(%v)", what, got, want)
			}
		case <-time.After(within):
			t.Fatalf("%s: no up(%v) within %s", what, want, within)
		}
	}
	expect(true, 10*time.Second, "listening")
	stalledAt := time.Now()
	p.stalled.Store(true)
	expect(false, 15*time.Second, "the connection hung")
	t.Logf("a hung listening connection was given up after %s", time.Since(stalledAt).Round(time.Millisecond))
	p.stalled.Store(false)
	expect(true, 15*time.Second, "listening again once the way is clear")
}

// stallingProxy passes TCP bytes both ways between its clients and a
// server, and holds them (sockets open, nothing passed) while stalled.
type stallingProxy struct {
	addr    string
	stalled atomic.Bool
}

func startStallingProxy(t *testing.T, server string) *stallingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallingProxy{addr: ln.Addr().String()}
	var conns sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	closed := false
	t.Cleanup(func() {
		p.stalled.Store(false) // bytes held by a failed test go on, and their copies end
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	pass := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			for n > 0 && p.stalled.Load() {
				time.Sleep(10 * time.Millisecond)
			}
			if n > 0 {
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				dst.Close()
				return
			}
		}
	}
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			upstream, err := net.Dial("tcp", server)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			if closed { // a connection made while the test ended
				mu.Unlock()
				client.Close()
				upstream.Close()
				return
			}
			open = append(open, client, upstream)
			conns.Add(2)
			mu.Unlock()
			go func() { defer conns.Done(); pass(upstream, client) }()
			go func() { defer conns.Done(); pass(client, upstream) }()
		}
	}()
	return p
}
