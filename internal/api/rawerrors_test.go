package api_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/testserver"
)

// sendRaw writes req, as is, on a new connection to s that ends after
// within, and returns the connection for the caller to read and close.
func sendRaw(t *testing.T, s *testserver.Server, req string, within time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(within))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		t.Fatal(err)
	}
	return c
}

// rawRequest writes req on a new connection to s and reads one answer.
func rawRequest(t *testing.T, s *testserver.Server, req string) (*http.Response, []byte) {
	t.Helper()
	c := sendRaw(t, s, req, 10*time.Second)
	defer c.Close()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%.60q: no answer: %v", req, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%.60q: %v", req, err)
	}
	return resp, body
}

// TestMalformedRequestsGetTheEnvelope: the requests Go's HTTP server
// refuses before any handler runs (an unparsable request line, headers
// over the limit, a bad Host, Content-Length or Transfer-Encoding) are
// answered in the API's error envelope, like every other error, not in
// Go's plain text; well-formed requests are answered as before.
func TestMalformedRequestsGetTheEnvelope(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	for _, c := range []struct {
		name, req string
		status    int
		code      string
		message   string
	}{
		{"bad escape in the path", "GET /v1/transactions/%zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "VALIDATION_ERROR", "malformed HTTP request"},
		{"no Host", "GET /v1/transactions HTTP/1.1\r\n\r\n", 400, "VALIDATION_ERROR", "malformed HTTP request: missing required Host header"},
		{"two Content-Lengths", "POST /v1/transactions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, "VALIDATION_ERROR", "malformed HTTP request"},
		{"headers over the limit", "GET /v1/transactions HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", 431, "REQUEST_HEADER_FIELDS_TOO_LARGE", "the request's headers are too large"},
		{"unknown transfer encoding", "POST /v1/transactions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: zip\r\n\r\n", 501, "NOT_IMPLEMENTED", "Unsupported transfer encoding"},
		{"CONNECT", "CONNECT 127.0.0.1:5432 HTTP/1.1\r\nHost: 127.0.0.1:5432\r\n\r\n", 501, "NOT_IMPLEMENTED", "CONNECT is not supported"},
		{"the asterisk target", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400, "VALIDATION_ERROR", "the request target * names no resource"},
	} {
		resp, body := rawRequest(t, s, c.req)
		var env struct {
			Error struct {
				Code    string            `json:"code"`
				Message string            `json:"message"`
				Status  int               `json:"status"`
				Fields  map[string]string `json:"fields"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			t.Errorf("%s: %d, not the envelope: %q", c.name, resp.StatusCode, body)
			continue
		}
		e := env.Error
		if resp.StatusCode != c.status || e.Status != c.status || e.Code != c.code || !strings.HasPrefix(e.Message, c.message) {
			t.Errorf("%s: %d %+v, want %d %s %q", c.name, resp.StatusCode, e, c.status, c.code, c.message)
		}
		if c.status == 400 && e.Fields["request"] == "" {
			t.Errorf("%s: a VALIDATION_ERROR without fields: %+v", c.name, e)
		}
		if resp.Header.Get("Content-Type") != "application/json; charset=utf-8" || resp.Header.Get("X-Content-Type-Options") != "nosniff" || !resp.Close ||
			!payment.ValidID(resp.Header.Get("X-Request-Id")) {
			t.Errorf("%s: headers %v, close %v", c.name, resp.Header, resp.Close)
		}
	}

	// Handlers' answers, plain-text-looking ones included, pass untouched.
	resp, body := rawRequest(t, s, "GET /v1/transactions HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 401 || !strings.Contains(string(body), `"UNAUTHORIZED"`) || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("an API answer changed: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = rawRequest(t, s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Errorf("/healthz: %d %s", resp.StatusCode, body)
	}
}

// TestChunkedRequestEndsTheConnection: a request whose body came chunked,
// with a Content-Length beside it (the shape of a request-smuggling
// attempt) or without, is answered and its connection closed, so that
// bytes a proxy in front framed differently are never read as a request
// of their own. A request framed by its Content-Length keeps the
// connection open for the next.
func TestChunkedRequestEndsTheConnection(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{})
	// answers writes reqs on one connection and reads every answer the
	// server gives before it closes the connection.
	answers := func(reqs string) []int {
		c := sendRaw(t, s, reqs, 5*time.Second)
		defer c.Close()
		br := bufio.NewReader(c)
		var statuses []int
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("%.40q: the connection stayed open after %v", reqs, statuses)
				}
				return statuses
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses = append(statuses, resp.StatusCode)
			if resp.Close {
				// Nothing more may come: the next read must end.
				if _, err := br.ReadByte(); err == nil {
					t.Errorf("%.40q: bytes after an answer that closes the connection", reqs)
				}
				return statuses
			}
		}
	}
	const next = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	for name, c := range map[string]struct {
		reqs string
		want []int
	}{
		"Content-Length and Transfer-Encoding": {
			"POST /v1/transactions HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + next, []int{401}},
		"chunked alone": {
			"POST /v1/transactions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n" + next, []int{401}},
		"Content-Length alone": {
			"POST /v1/transactions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" + next + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", []int{401, 200, 200}},
	} {
		if got := answers(c.reqs); !slices.Equal(got, c.want) {
			t.Errorf("%s: answers %v, want %v", name, got, c.want)
		}
	}
}

// TestLongRequestsAreClippedInTheLog: a path or a method of any length,
// which anyone can send without a key, is clipped in the request's log
// line and in the 405 answer that names the method, so that a caller
// cannot write the log's disk full at the rate it sends.
func TestLongRequestsAreClippedInTheLog(t *testing.T) {
	t.Parallel()
	var log testlog.Buffer
	s := testserver.Start(t, testserver.Options{Log: &log})
	long := strings.Repeat("a", 15000)
	resp, _ := rawRequest(t, s, "GET /"+long+" HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a long path: %d", resp.StatusCode)
	}
	method := strings.Repeat("M", 5000)
	resp, body := rawRequest(t, s, method+" /v1/transactions HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusMethodNotAllowed || len(body) > 1000 || !strings.Contains(string(body), "(5000 bytes) is not allowed here") {
		t.Errorf("a long method: %d, %d bytes: %.300s", resp.StatusCode, len(body), body)
	}
	seen := 0
	for _, line := range strings.Split(log.String(), "\n") {
		if !strings.Contains(line, `"msg":"request"`) {
			continue
		}
		seen++
		if len(line) > 1000 {
			t.Errorf("a request line of %d bytes: %.300s", len(line), line)
		}
	}
	if seen < 2 {
		t.Fatalf("%d request lines logged, want 2:\n%.2000s", seen, log.String())
	}
}
