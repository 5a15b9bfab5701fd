package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads the reverse proxies whose X-Forwarded-For is
// believed: a comma-separated list of addresses ("10.0.0.5") and prefixes
// ("10.0.0.0/24", "fd00::/8"). The empty string trusts none.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a prefix such as 10.0.0.0/8", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// IsTrustedProxy reports whether a is one of the trusted proxies.
func IsTrustedProxy(trusted []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// behindProxies gives a request that came through a trusted reverse proxy
// the address of the client the proxy served, as its RemoteAddr: the
// failed-authentication limits (API and dashboard) and the audit log key
// on that address. Without it, every client behind the proxy shares the
// proxy's address, so one client sending bad keys or passwords would lock
// everybody out.
//
// X-Forwarded-For is anyone's to write, so only a peer in trusted is
// believed, and of its list only the part the trusted proxies appended:
// the client is the rightmost address that is not itself a trusted proxy
// (a client's own "X-Forwarded-For: 1.2.3.4" sits to the left of the
// address the proxy saw, and is ignored). A request from any other peer
// keeps its peer address.
func behindProxies(trusted []netip.Prefix, next http.Handler) http.Handler {
	if len(trusted) == 0 {
		return next
	}
	isTrusted := func(a netip.Addr) bool { return IsTrustedProxy(trusted, a) }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !isTrusted(peer.Addr()) {
			next.ServeHTTP(w, r)
			return
		}
		client := peer.Addr()
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a garbled entry: trust nothing further left
			}
			client = a.Unmap()
			if !isTrusted(client) {
				break
			}
		}
		r2 := r.WithContext(r.Context()) // a shallow copy
		r2.RemoteAddr = net.JoinHostPort(client.String(), "0")
		next.ServeHTTP(w, r2)
	})
}
