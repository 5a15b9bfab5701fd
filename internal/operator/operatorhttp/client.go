// Package operatorhttp is the HTTP client the operator adapters (and the
// sandbox's simulated Airtel, calling back) share. It is apart from package
// operator, which the payment domain imports and which must not depend on
// net/http.
package operatorhttp

import (
	"net/http"
	"time"
)

// MaxIdleConnsPerHost is how many connections to an operator's API an
// adapter keeps open between calls: about the payments a process has in
// flight with it at once (creates and status polls).
const MaxIdleConnsPerHost = 64

// Client returns the client an adapter calls its operator with,
// bounded by timeout (0: by each call's context alone). Its transport
// keeps MaxIdleConnsPerHost idle connections to the operator: net/http's
// default keeps 2 per host, so with dozens of payments in flight nearly
// every call opened a new TCP connection (a TLS handshake, in live mode)
// and left the old one in TIME_WAIT. In the sandbox profile that churn
// was the largest part of a create's system time.
//
// It follows no redirect: a 3xx is returned as the answer, which the
// adapters read as "unknown". Following one would send a request body
// holding credentials (Airtel's client secret, Moov's token) to whatever
// host the Location names, and take that host's word for a payment's
// outcome.
func Client(timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 2 * MaxIdleConnsPerHost
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return &http.Client{Transport: t, Timeout: timeout, CheckRedirect: noRedirect}
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
