package api

import (
	_ "embed"
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/payment"
)

//go:embed openapi.json
var openAPIDocument []byte

// Server is the HTTP surface of momopay.
type Server struct {
	payments Payments
	keys     KeyAuthenticator
	// keyLimits holds the rate limit of each API key (by key id);
	// authFailures that of failed authentications per client address.
	keyLimits    KeyLimiter
	authFailures Throttle
	knownKeys    knownKeys
	// lookups lets requests that present one unknown key at once share
	// its lookup (identify).
	lookups singleflight.Group
	// rejectedCallbacks spaces the log lines of refused callbacks.
	rejectedCallbacks rate.Sometimes
	// callbacks reads the callbacks of the operators that send them.
	callbacks map[payment.Operator]operator.CallbackReader
	mount     func(*http.ServeMux)
	now       func() time.Time
	log       *slog.Logger
	observe   ObserveRequest
	trusted   []netip.Prefix
	page404   http.Handler
	// finals keeps final transactions' answers (finals.go).
	finals *finals
}

// Config carries the Server's collaborators.
type Config struct {
	Payments  Payments
	Keys      KeyAuthenticator
	Callbacks map[payment.Operator]operator.CallbackReader
	// RateLimit applies per merchant; the zero value turns it off.
	RateLimit RateLimit
	Now       func() time.Time
	Logger    *slog.Logger
	// ObserveRequest, when set, is told about every request (metrics).
	ObserveRequest ObserveRequest

	// KeyLimiter counts RateLimit; nil counts it in this process alone.
	KeyLimiter KeyLimiter
	// Throttles makes the failed-authentication throttle; nil counts it
	// in this process alone.
	Throttles Throttles

	// Mount adds other surfaces' routes (the dashboard's) to the one mux,
	// under the same middleware.
	Mount func(*http.ServeMux)

	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (see behindProxies); none by default.
	TrustedProxies []netip.Prefix

	// PageNotFound, when set, answers a browser (Accept: text/html) that
	// asks for a path outside the API: the dashboard's 404 page rather
	// than the API's JSON.
	PageNotFound http.Handler
}

// NewServer builds the HTTP handler of the whole service.
func NewServer(cfg Config) *Server {
	if cfg.KeyLimiter == nil {
		cfg.KeyLimiter = NewLocalLimiter(cfg.RateLimit)
	}
	if cfg.Throttles == nil {
		cfg.Throttles = LocalThrottles
	}
	return &Server{
		payments: cfg.Payments, keys: cfg.Keys, callbacks: cfg.Callbacks, mount: cfg.Mount, now: cfg.Now, log: cfg.Logger, observe: cfg.ObserveRequest,
		keyLimits: cfg.KeyLimiter, trusted: cfg.TrustedProxies, page404: cfg.PageNotFound,
		authFailures:      cfg.Throttles("auth-failures", AuthFailureLimit),
		rejectedCallbacks: rate.Sometimes{First: 1, Interval: time.Second},
		finals:            newFinals(),
	}
}

// Handler returns the routes table wrapped in the common middleware.
//
// Every route of the service is listed here. A method-less pattern beside
// the method-specific ones answers other methods with 405 in the contract's
// envelope, and "/" answers unknown paths with 404.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/transactions", s.requireKey(s.handleCreateTransaction()))
	mux.Handle("GET /v1/transactions", s.requireKey(s.handleListTransactions()))
	// A GET pattern also serves HEAD, so the Allow lists name it.
	mux.Handle("/v1/transactions", methodNotAllowed("GET, HEAD, POST"))
	mux.Handle("GET /v1/transactions/{id}", s.requireKey(s.handleGetTransaction()))
	mux.Handle("/v1/transactions/{id}", methodNotAllowed("GET, HEAD"))
	mux.Handle("POST /callbacks/{operator}", s.handleOperatorCallback())
	mux.Handle("/callbacks/{operator}", methodNotAllowed("POST"))
	mux.Handle("GET /v1/openapi.json", handleOpenAPI())
	mux.Handle("/v1/openapi.json", methodNotAllowed("GET, HEAD"))
	mux.Handle("GET /healthz", handleHealth())
	mux.Handle("/healthz", methodNotAllowed("GET, HEAD"))
	mux.Handle("/", s.notFound())
	if s.mount != nil {
		s.mount(mux)
	}
	return behindProxies(s.trusted, withRequest(s.log, s.observe, s.saneRequestsOnly(mux)))
}

// saneRequestsOnly answers a path with "//", "." or ".." segments 404 (the
// API's, or the dashboard's page for a browser), as it answers any path no
// route has. ServeMux would redirect it to the cleaned path with a 307,
// which a client that follows redirects obeys by sending its POST, a
// payment, once more.
//
// It also closes the connection after a request whose body came chunked.
// net/http frames such a body by Transfer-Encoding and drops a
// Content-Length sent beside it before any handler can see it; a proxy in
// front that framed the same bytes by the Content-Length would take what
// follows for another request than the one this server reads next, the
// desync that request smuggling rides on. RFC 9112 (section 6.3) asks a
// server that accepts both headers to close the connection after its
// answer; since the Content-Length is gone, every chunked request is
// treated so. Clients send bodies with a Content-Length almost always, and
// a chunked one costs its client a new connection, nothing more.
func (s *Server) saneRequestsOnly(next http.Handler) http.Handler {
	notFound := s.notFound()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(r.TransferEncoding, "chunked") {
			w.Header().Set("Connection", "close")
		}
		if r.Method == http.MethodConnect {
			// ServeMux would answer it 405 in plain text, with an Allow
			// of whatever path its authority-form target looked like. A
			// client that meant to open a tunnel gets the connection closed.
			w.Header().Set("Connection", "close")
			writeProblem(w, http.StatusNotImplemented, codeNotImplemented, "CONNECT is not supported: this server is no proxy")
			return
		}
		if r.RequestURI == "*" {
			// The asterisk form names no resource (RFC 9112 section
			// 3.2.4, for OPTIONS only, which net/http answers before any
			// handler); ServeMux would answer 400 with no body.
			w.Header().Set("Connection", "close")
			writeError(w, r, s.log, &payment.Error{Code: payment.EINVALID, Message: "the request target * names no resource: send a path such as /v1/transactions",
				Fields: map[string]string{"request": "is not a well-formed HTTP/1.1 request"}})
			return
		}
		p := r.URL.Path
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		if p != clean {
			notFound.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeProblem(w, http.StatusMethodNotAllowed, codeMethodNotAllow, clip(r.Method, maxLoggedMethod)+" is not allowed here; use "+allow)
	})
}

// WantsPage reports whether r comes from a browser asking for a page
// (Accept names text/html): an unknown path answers it with the
// dashboard's 404 page rather than the error envelope.
func WantsPage(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// notFound answers a path no route has: the API's 404 in its envelope,
// or for a browser asking for a page outside /v1 and /callbacks, the
// dashboard's 404 page (page404).
func (s *Server) notFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apiPath := strings.HasPrefix(r.URL.Path, "/v1/") || strings.HasPrefix(r.URL.Path, "/callbacks/")
		if s.page404 != nil && !apiPath && WantsPage(r) {
			s.page404.ServeHTTP(w, r)
			return
		}
		writeProblem(w, http.StatusNotFound, codeNotFound, "no such endpoint")
	})
}

func handleOpenAPI() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Write(openAPIDocument)
	})
}

func handleHealth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}
