package app

import (
	"net"
	"net/netip"
	"sync"

	"github.com/momopay/momopay/internal/api"
)

// Bounds on the connections the API listener keeps open. Without them, one
// client opening idle keep-alive connections took every file descriptor of
// the process (an audit reached 20,000): the listener then failed to
// accept anyone, the admin listener went dark, and the service could not
// open a socket to an operator or a database, so a push failed and an
// operator's callback was lost. A connection past either bound is closed
// as soon as it is accepted.
const (
	// maxConnsPerClient is per client address (an IPv6 /64, as the
	// limits of api.ClientKey count it): far above what a merchant's
	// server or an office of dashboard users opens. Trusted proxies,
	// which carry many clients' connections, are exempt.
	maxConnsPerClient = 1000
	// connsReserve is the part of the process's open-file limit left to
	// everything else: the admin listener, the database pool, Redis, the
	// operators and webhook receivers, files.
	connsReserve = 1024
)

// connLimit is a listener that enforces the two bounds.
type connLimit struct {
	net.Listener
	total     int // at most this many open at once
	perClient int // and this many of one client
	trusted   []netip.Prefix

	mu   sync.Mutex
	open int
	by   map[string]int
}

// limitConns bounds ln's open connections to maxConnsPerClient per client
// address and, in all, to the open-file limit less connsReserve.
func limitConns(ln net.Listener, trusted []netip.Prefix) net.Listener {
	return &connLimit{Listener: ln, total: max(openFileLimit()-connsReserve, 256), perClient: maxConnsPerClient,
		trusted: trusted, by: map[string]int{}}
}

// Accept returns the next connection within the bounds, closing the ones
// past them on the way.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := l.client(c.RemoteAddr())
		if l.admit(client) {
			return &limitedConn{Conn: c, release: func() { l.release(client) }}, nil
		}
		c.Close()
	}
}

// client is the per-client key of addr, or "" for a trusted proxy.
func (l *connLimit) client(addr net.Addr) string {
	if ap, err := netip.ParseAddrPort(addr.String()); err == nil && api.IsTrustedProxy(l.trusted, ap.Addr()) {
		return ""
	}
	return api.ClientKey(addr.String())
}

func (l *connLimit) admit(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.total || (client != "" && l.by[client] >= l.perClient) {
		return false
	}
	l.open++
	if client != "" {
		l.by[client]++
	}
	return true
}

func (l *connLimit) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if client == "" {
		return
	}
	if l.by[client]--; l.by[client] == 0 {
		delete(l.by, client)
	}
}

// limitedConn gives its place back once, when it is closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// CloseWrite keeps the half-close the server uses after an error answer
// (api.EnvelopeErrors).
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
