package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/momopay/momopay/internal/payment"
)

// MaxURLLength bounds a webhook URL. Longer values are almost always pasted
// by mistake, and the bound keeps stored endpoints and logs small.
const MaxURLLength = 2048

// ErrForbiddenAddress is wrapped by the dial error when the client is about
// to connect to an address its mode does not allow (allowedAddr). Callers test
// for it with errors.Is, which sees through *url.Error and *net.OpError, to
// tell a refused target from an unreachable one.
var ErrForbiddenAddress = errors.New("webhook: destination address is not public")

// nonPublicPrefixes lists special-purpose ranges (IANA IPv4 and IPv6
// Special-Purpose Address Registries) that netip's predicates do not cover.
// A webhook sent there would reach the operator's own network, a test range
// or nowhere, so none is a legitimate merchant receiver.
var nonPublicPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, includes broadcast
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, Teredo
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds an arbitrary IPv4
	netip.MustParsePrefix("3fff::/20"),       // documentation
}

// globalUnicast6 is the only IPv6 block allocated for global unicast. Outside
// it sit IPv4-compatible and NAT64 forms (which can embed private IPv4),
// discard-only, unique-local, site-local, link-local and multicast space.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// IsPublicAddr reports whether addr is a globally routable unicast address,
// the only kind a live-mode delivery may reach. It exists to stop server-side
// request forgery: a merchant-chosen URL must not reach loopback, the private
// network, cloud metadata at 169.254.169.254 or other special-purpose space.
// IPv4-mapped IPv6 addresses are judged by the IPv4 address they carry, and
// the zone of a scoped address is ignored.
func IsPublicAddr(addr netip.Addr) bool {
	addr = addr.WithZone("").Unmap()
	if !addr.IsValid() ||
		addr.IsUnspecified() ||
		addr.IsLoopback() ||
		addr.IsPrivate() ||
		addr.IsLinkLocalUnicast() ||
		addr.IsLinkLocalMulticast() ||
		addr.IsInterfaceLocalMulticast() ||
		addr.IsMulticast() {
		return false
	}
	if addr.Is6() && !globalUnicast6.Contains(addr) {
		return false
	}
	for _, p := range nonPublicPrefixes {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// allowedAddr reports whether a delivery may connect to addr: a public
// address, or in sandbox mode also loopback, so that merchants can test
// against a receiver on their own machine. The private network and
// link-local space (cloud metadata at 169.254.169.254) stay out of reach in
// sandbox mode too: a shared sandbox would otherwise let any merchant probe
// the operator's network and read the start of its answers through the test
// event.
func allowedAddr(addr netip.Addr, live bool) bool {
	return IsPublicAddr(addr) || (!live && addr.WithZone("").Unmap().IsLoopback())
}

// The reasons ValidateURL refuses a URL for, each its own error, worded for
// the merchant. Callers that speak to the merchant in another language (the
// dashboard) tell them apart with errors.Is, never by their words.
var (
	ErrURLRequired     = errors.New("webhook URL is required")
	ErrURLTooLong      = fmt.Errorf("webhook URL must be at most %d characters", MaxURLLength)
	ErrURLUnparsable   = errors.New("webhook URL is not a valid URL")
	ErrURLNotHTTPS     = errors.New("webhook URL must start with https:// in live mode")
	ErrURLScheme       = errors.New("webhook URL must start with http:// or https://")
	ErrURLNoHost       = errors.New("webhook URL must include a host name")
	ErrURLUserinfo     = errors.New("webhook URL must not contain a user name or password")
	ErrURLSpace        = errors.New("webhook URL must not contain spaces: write a space as %20")
	ErrURLPort         = errors.New("webhook URL has an invalid port")
	ErrURLLocalhost    = errors.New("webhook URL must not point to localhost in live mode")
	ErrURLNumericHost  = errors.New("webhook URL must name its host, or give a full IP address (like 203.0.113.7), not a shortened or numeric form")
	ErrURLNonPublic    = errors.New("webhook URL must not point to a private, loopback or link-local address in live mode")
	ErrURLPrivateLocal = errors.New("webhook URL must not point to a private or link-local address (loopback is allowed in sandbox mode)")
)

// ValidateURL checks a webhook URL when a merchant registers it, so mistakes
// are reported at once instead of as failed deliveries hours later. The URL
// must be absolute http or https with a host, carry no user name or password
// (they would end up in logs) and be at most MaxURLLength characters. In live
// mode the contract (section 6) requires https, and a literal IP or localhost
// host must be public; sandbox mode allows http, localhost and loopback
// addresses besides. Host names are checked again when dialing, because DNS
// can change after registration. The error is one of the ErrURL reasons.
func ValidateURL(raw string, live bool) error {
	if strings.TrimSpace(raw) == "" {
		return ErrURLRequired
	}
	if len(raw) > MaxURLLength {
		return ErrURLTooLong
	}
	if !payment.IsText(raw) {
		// Not text (PostgreSQL would refuse to store it) or with control
		// characters, which url.Parse lets through in the path and query
		// once they are percent-decoded.
		return ErrURLUnparsable
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ErrURLUnparsable
	}
	if strings.ContainsFunc(raw, unicode.IsSpace) {
		// url.Parse keeps a space of the path or query, and one of the
		// query would be sent as it is in the request line, which
		// receivers refuse: every delivery would fail.
		return ErrURLSpace
	}
	switch {
	case live && u.Scheme != "https":
		return ErrURLNotHTTPS
	case u.Scheme != "http" && u.Scheme != "https":
		return ErrURLScheme
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return ErrURLNoHost
	}
	if u.User != nil {
		return ErrURLUserinfo
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return ErrURLPort
		}
	}
	host, err := asciiHost(u.Hostname())
	if err != nil {
		return ErrURLUnparsable
	}
	if live && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		return ErrURLLocalhost
	}
	addr, err := netip.ParseAddr(host)
	if err != nil && endsInNumber(host) {
		// 2130706433, 0x7f.1 or 10.1 are no names: browsers and some
		// resolvers read them as IPv4 addresses (127.0.0.1, 10.0.0.1),
		// which the address check below would not see.
		return ErrURLNumericHost
	}
	if err == nil && !allowedAddr(addr, live) {
		if live {
			return ErrURLNonPublic
		}
		return ErrURLPrivateLocal
	}
	return nil
}

// asciiHost is the host as a delivery will look it up: net/http maps a
// name with non-ASCII characters through IDNA's lookup profile (as
// browsers do), which turns full-width digits, "。" and the like into
// their ASCII forms, so "１２７。０。０。１" is 127.0.0.1 and must be judged as
// such here. Lower case, without a final dot.
func asciiHost(host string) (string, error) {
	for i := range len(host) {
		if host[i] >= utf8.RuneSelf {
			ascii, err := idna.Lookup.ToASCII(host)
			if err != nil {
				return "", err
			}
			host = ascii
			break
		}
	}
	return strings.TrimSuffix(strings.ToLower(host), "."), nil
}

// endsInNumber reports whether host's last label is a number (decimal, or
// hexadecimal after 0x), which makes it an IPv4 address in the URL
// standard's reading whatever else it holds: no top-level domain is
// numeric.
func endsInNumber(host string) bool {
	last := host[strings.LastIndex(host, ".")+1:]
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// maxIdleConns bounds the connections to receivers kept open between
// attempts, per host and in all: about the webhook workers of a process.
const maxIdleConns = 100

// maxAnswerHeaderBytes bounds a receiver's response headers: far more than
// any web server sends (nginx answers in well under 1 KiB), and an answer
// past it is a failed attempt.
const maxAnswerHeaderBytes = 64 << 10

// NewHTTPClient returns the client that delivers webhooks. It never follows
// redirects: a 3xx is returned as the answer, which the contract counts as a
// failure, and following it could lead a delivery to an internal host. It
// has its own transport with proxies disabled, so the environment cannot
// route deliveries around the address check. The dialer refuses what
// allowedAddr does not allow after DNS resolution, at the moment of
// connecting, which also defeats DNS rebinding; the error wraps
// ErrForbiddenAddress. It also refuses the ports of own, the process's own
// listeners, on this machine's addresses (see dialGuard).
// timeout bounds the whole attempt (the contract's 10 seconds, from callers).
func NewHTTPClient(live bool, timeout time.Duration, own ...netip.AddrPort) *http.Client {
	dialer := &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
	}
	dialer.Control = newDialGuard(live, own).control
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.DialContext = dialer.DialContext
	// Keep connections to a receiver open between attempts. The default
	// transport keeps 2 idle per host: with dozens of workers sending to
	// one merchant's endpoint, every other attempt opened (and left in
	// TIME_WAIT) a new TCP connection, and a TLS handshake in live mode.
	// No Accept-Encoding: gzip of Go's own: a delivery carries the
	// documented headers only, and an answer is read for its first KiB.
	transport.DisableCompression = true
	// An answer's headers are read whole before anything else: Go's
	// default allows 10 MiB, which a receiver could fill on each of the
	// 100 workers (about 1 GB of the server's memory, measured at 9 MB an
	// attempt). Nothing of them is kept but the status.
	transport.MaxResponseHeaderBytes = maxAnswerHeaderBytes
	transport.MaxIdleConns = maxIdleConns
	transport.MaxIdleConnsPerHost = maxIdleConns
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// dialGuard is the dialer's Control hook. It runs for every connection
// with the already-resolved address, so it judges the address actually
// used rather than the name in the URL; an address it cannot parse is
// refused (failing closed is the safe side of an SSRF check).
//
// Beside allowedAddr's rule it keeps deliveries off momopay's own
// listeners: the sandbox lets merchants deliver to loopback, and the test
// event shows the start of the answer, so a delivery to the admin
// listener's port would read /debug/pprof (the command line, goroutine
// stacks) of a shared sandbox. A port of its own is refused on loopback and
// on every address of this machine's interfaces (an admin listener on all
// interfaces is reachable by the machine's public address too, around a
// firewall that only stops outsiders).
type dialGuard struct {
	live      bool
	ownPorts  map[uint16]bool
	localAddr map[netip.Addr]bool
}

func newDialGuard(live bool, own []netip.AddrPort) *dialGuard {
	g := &dialGuard{live: live, ownPorts: map[uint16]bool{}, localAddr: map[netip.Addr]bool{}}
	for _, ap := range own {
		g.ownPorts[ap.Port()] = true
	}
	if len(g.ownPorts) > 0 {
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				g.localAddr[p.Addr().Unmap()] = true
			}
		}
		for _, ap := range own {
			g.localAddr[ap.Addr().WithZone("").Unmap()] = true
		}
	}
	return g
}

func (g *dialGuard) control(network, address string, _ syscall.RawConn) error {
	if err := refuseUnless(network, address, g.live); err != nil {
		return err
	}
	ap, _ := netip.ParseAddrPort(address) // refuseUnless parsed it
	if addr := ap.Addr().WithZone("").Unmap(); g.ownPorts[ap.Port()] && (addr.IsLoopback() || g.localAddr[addr]) {
		return fmt.Errorf("%w: %s is momopay's own listener", ErrForbiddenAddress, ap)
	}
	return nil
}

func refuseUnless(network, address string, live bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse %q (%s)", ErrForbiddenAddress, address, network)
	}
	if !allowedAddr(ap.Addr(), live) {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}
