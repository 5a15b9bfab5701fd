package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Version is the SDK version, sent in the User-Agent so the provider can tell
// which client a merchant runs when diagnosing a problem.
const Version = "0.1.0"

const (
	// DefaultBaseURL is a momopay running locally in sandbox mode, so the
	// zero-configuration client never talks to a live service by accident.
	DefaultBaseURL = "http://127.0.0.1:8080"
	// DefaultMaxRetries is how many times a failed request is retried
	// (three attempts in all), enough to ride out a brief outage without
	// holding a checkout page for long.
	DefaultMaxRetries = 2
	// DefaultTimeout bounds each attempt, so a hung connection turns into a
	// retryable NETWORK_ERROR instead of blocking forever.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRetryWait is the longest pause between attempts. A failure
	// whose retry_after is longer is returned at once: retrying before the
	// service asked would only meet the same refusal.
	DefaultMaxRetryWait = 10 * time.Second
)

// maxResponseBytes bounds how much of an answer is read, so a misconfigured
// base URL pointing at a large download cannot exhaust memory.
const maxResponseBytes = 8 << 20

// Client calls the momopay public API with one merchant's API key. It is safe
// for concurrent use; create one and share it.
//
// Create it with New: the zero value has no HTTP client or base URL, and its
// methods panic.
type Client struct {
	apiKey       string
	baseURL      string
	httpClient   *http.Client
	timeout      time.Duration
	userAgent    string
	maxRetries   int
	maxRetryWait time.Duration

	// sleep waits between attempts; tests replace it to observe delays.
	sleep func(ctx context.Context, d time.Duration) error
}

// Option configures a Client in New.
type Option func(*Client)

// New returns a client that authenticates with apiKey (the
// "service_live_…" key shown once in the dashboard).
func New(apiKey string, opts ...Option) *Client {
	c := &Client{
		apiKey:       apiKey,
		baseURL:      DefaultBaseURL,
		httpClient:   noRedirects(http.DefaultClient),
		timeout:      DefaultTimeout,
		userAgent:    "momopay-go/" + Version,
		maxRetries:   DefaultMaxRetries,
		maxRetryWait: DefaultMaxRetryWait,
		sleep:        sleepContext,
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// WithBaseURL points the client at a momopay deployment, e.g.
// "https://api.example.td" (http:// too, for a local sandbox). A trailing
// slash, or "/v1", is ignored. An empty value
// keeps DefaultBaseURL, so an unset environment variable
// (WithBaseURL(os.Getenv("MOMOPAY_URL"))) means the local sandbox rather
// than a client whose every call fails.
func WithBaseURL(u string) Option {
	return func(c *Client) {
		// The API's own /v1 is added to each path: given here too, every
		// call would be a 404 that reads as "no such payment".
		u = strings.TrimSuffix(strings.TrimRight(u, "/"), "/v1")
		if u = strings.TrimRight(u, "/"); u != "" {
			c.baseURL = u
		}
	}
}

// WithHTTPClient supplies the *http.Client used for every request, for
// proxies, custom TLS or instrumentation. nil restores http.DefaultClient.
// The client uses a copy of it that follows no redirect (see noRedirects).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc == nil {
			hc = http.DefaultClient
		}
		c.httpClient = noRedirects(hc)
	}
}

// noRedirects returns a copy of hc that follows no redirect: the momopay
// API never redirects, and Go's client would send the API key along to
// another port or scheme of the same host (https to http included). A 3xx
// is then an UNEXPECTED_RESPONSE.
func noRedirects(hc *http.Client) *http.Client {
	cp := *hc
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// WithTimeout bounds each attempt (not the whole call with its retries; use
// the context for that). Zero or a negative value disables the per-attempt
// bound.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) { c.timeout = d }
}

// WithUserAgent names the merchant's application, e.g. "shop/1.4"; it is
// sent before the SDK's own token so both show in the provider's logs.
func WithUserAgent(ua string) Option {
	return func(c *Client) {
		if ua = strings.TrimSpace(ua); ua != "" {
			c.userAgent = ua + " momopay-go/" + Version
		}
	}
}

// WithMaxRetries sets how many times a retryable failure is retried; 0
// turns retries off. The package documentation says what is retried.
func WithMaxRetries(n int) Option {
	return func(c *Client) { c.maxRetries = max(n, 0) }
}

// WithMaxRetryWait sets the longest pause between attempts
// (DefaultMaxRetryWait), for callers that would rather fail fast than honour
// a long retry_after. A failure whose retry_after exceeds it is returned at
// once, with Error.RetryAfter saying when to try again: retrying sooner than
// the service asked would fail the same way.
func WithMaxRetryWait(d time.Duration) Option {
	return func(c *Client) { c.maxRetryWait = max(d, 0) }
}

// call sends one API request under the retry policy and decodes a 2xx JSON
// answer into out. It reports whether an attempt it tried again may have
// been acted on all the same (mayHaveArrived), so that CreateTransaction
// can tell a 409 caused by its own earlier attempt.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) (unsure bool, err error) {
	u := c.baseURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var body []byte
	if in != nil {
		if body, err = json.Marshal(in); err != nil {
			return false, invalidRequest("encoding the request", err)
		}
	}
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, method, u, body, out)
		if err == nil {
			return unsure, nil
		}
		if wait, ok := c.retryDelay(ctx, err, attempt); ok && c.sleep(ctx, wait) == nil {
			unsure = unsure || mayHaveArrived(err)
			continue
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			// The caller gave up before the next attempt: keep the last
			// failure, which says what went wrong, but let it match the
			// context's error too, which says why we stopped.
			return unsure, interrupted(err, ctxErr)
		}
		return unsure, err
	}
}

// attempt makes a single HTTP exchange. The body is read in full before the
// per-attempt context is cancelled, so a slow body also counts as a timeout.
func (c *Client) attempt(ctx context.Context, method, u string, body []byte, out any) error {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err == nil && (req.URL.Scheme != "https" && req.URL.Scheme != "http" || req.URL.Host == "") {
		// Go builds "api.example.td/v1/..." as a path with no host; sent,
		// it fails as a network error the client would retry in vain.
		err = fmt.Errorf("the base URL %q must start with https:// (or http://) and name a host", c.baseURL)
	}
	if err != nil {
		return invalidRequest("building the request (check the base URL)", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := c.httpClient.Do(req)
	if err != nil {
		return networkError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return networkError(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return errorFromResponse(resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &Error{
			Code:      CodeUnexpectedResponse,
			Status:    resp.StatusCode,
			Message:   fmt.Sprintf("cannot decode the answer: %v: %q", err, snippet(data)),
			RequestID: resp.Header.Get("X-Request-Id"),
			cause:     err,
		}
	}
	return nil
}
