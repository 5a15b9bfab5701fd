package api_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/momopay/momopay/internal/testserver"
)

// TestResponsesMatchOpenAPI sends requests covering every documented
// status and checks each real response against the served OpenAPI document.
func TestResponsesMatchOpenAPI(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	doc := loadServedDocument(t, s)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	created := do(t, s, "POST", "/v1/transactions", s.APIKey, newPayment(nil))
	id := created.body["id"].(string)

	cases := []struct {
		method, path, key, body string
		status                  int
	}{
		{"POST", "/v1/transactions", s.APIKey, mustJSON(t, newPayment(nil)), 201},
		{"POST", "/v1/transactions", s.APIKey, mustJSON(t, newPayment(map[string]any{"description": nil})), 201},
		{"POST", "/v1/transactions", s.APIKey, `{"amount": 1.5}`, 400},
		{"POST", "/v1/transactions", s.APIKey, mustJSON(t, newPayment(map[string]any{"amount": 5})), 422},
		{"POST", "/v1/transactions", s.APIKey, mustJSON(t, newPayment(map[string]any{"reference": created.body["reference"]})), 409},
		{"POST", "/v1/transactions", s.APIKey, mustJSON(t, newPayment(map[string]any{"phone_number": "+23560000005"})), 503},
		{"POST", "/v1/transactions", "", mustJSON(t, newPayment(nil)), 401},
		{"POST", "/v1/transactions", s.APIKey, `{"reference":"` + strings.Repeat("x", 70<<10) + `"}`, 413},
		{"GET", "/v1/transactions/" + id, s.APIKey, "", 200},
		{"GET", "/v1/transactions/" + id, "", "", 401},
		{"GET", "/v1/transactions/0194a4c0-0000-7000-8000-000000000000", s.APIKey, "", 404},
		{"GET", "/v1/transactions", s.APIKey, "", 200},
		{"GET", "/v1/transactions?status=PENDING&operator=AIRTEL&page=1&per_page=5&from=2026-01-01", s.APIKey, "", 200},
		{"GET", "/v1/transactions?page=50", s.APIKey, "", 200},
		{"GET", "/v1/transactions?per_page=500", s.APIKey, "", 400},
		{"GET", "/v1/transactions", "", "", 401},
		{"GET", "/v1/openapi.json", "", "", 200},
		// Every VALIDATION_ERROR carries fields, also when only the body
		// as a whole can be named; the document requires them.
		{"POST", "/v1/transactions", s.APIKey, " ", 400},
		{"POST", "/v1/transactions", s.APIKey, "null", 400},
		{"POST", "/v1/transactions", s.APIKey, "[]", 400},
		{"POST", "/v1/transactions", s.APIKey, `{"reference":"a"`, 400},
		{"POST", "/v1/transactions", s.APIKey, `{"reference":"a"} x`, 400},
		{"POST", "/v1/transactions", s.APIKey, mustJSON(t, newPayment(map[string]any{"description": "a\x00b"})), 400},
		{"POST", "/v1/transactions", s.APIKey, mustJSON(t, newPayment(map[string]any{"amount": 10_000_001})), 422},
		{"GET", "/v1/transactions?status=", s.APIKey, "", 400},
		{"GET", "/v1/transactions?per_page=%zz", s.APIKey, "", 400},
		{"GET", "/v1/transactions?status=PENDING;x=1", s.APIKey, "", 400},
		{"GET", "/v1/transactions?page=9223372036854775807", s.APIKey, "", 200},
		{"GET", "/v1/transactions/urn:uuid:" + id, s.APIKey, "", 404},
		{"GET", "/v1/transactions/" + strings.ToUpper(id), s.APIKey, "", 200},
	}
	// send makes req and checks its answer's status and its agreement with
	// the document.
	send := func(t *testing.T, req *http.Request, status int) {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, status, body)
		}
		validateResponse(t, router, req, resp, body)
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path[:min(len(c.path), 60)]+" "+http.StatusText(c.status), func(t *testing.T) {
			req, _ := http.NewRequest(c.method, s.URL+c.path, strings.NewReader(c.body))
			if c.key != "" {
				req.Header.Set("Authorization", "Bearer "+c.key)
			}
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			send(t, req, c.status)
		})
	}

	// Headers over the server's limit: the HTTP layer's 431, in the
	// envelope the document describes.
	t.Run("GET /v1/transactions "+http.StatusText(http.StatusRequestHeaderFieldsTooLarge), func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.URL+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		req.Header.Set("X-Big", strings.Repeat("a", 30<<10))
		send(t, req, http.StatusRequestHeaderFieldsTooLarge)
	})

	// Refusals of the HTTP layer, before any operation runs, on documented
	// routes: the document's default response, in the envelope. Go's
	// client sends neither, so they are written by hand.
	for _, c := range []struct {
		name, method, path, raw string
		status                  int
	}{
		{"unsupported transfer encoding", "POST", "/v1/transactions",
			"POST /v1/transactions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", http.StatusNotImplemented},
		{"malformed Host", "GET", "/v1/transactions/" + id,
			"GET /v1/transactions/" + id + " HTTP/1.1\r\nHost: a b\r\n\r\n", http.StatusBadRequest},
	} {
		t.Run(c.method+" "+c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, c.raw); err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(c.method, s.URL+c.path, nil)
			resp, err := http.ReadResponse(bufio.NewReader(conn), req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, c.status, body)
			}
			validateResponse(t, router, req, resp, body)
		})
	}

	// Last, as it limits this address: a flood of bad keys ends in 429s,
	// which must carry retry_after. The limit refills with time, so on a
	// slow machine the flood may need more than its burst to get there.
	for i := 0; ; i++ {
		req, _ := http.NewRequest("GET", s.URL+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer service_live_"+strings.Repeat("Q", 32))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			validateResponse(t, router, req, resp, body)
			break
		}
		if resp.StatusCode != http.StatusUnauthorized || i == 200 {
			t.Fatalf("after %d bad keys: %d %s", i+1, resp.StatusCode, body)
		}
	}
}

func loadServedDocument(t *testing.T, s *testserver.Server) *openapi3.T {
	t.Helper()
	resp, err := http.Get(s.URL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is invalid: %v", err)
	}
	// Route on the test server's address instead of the documented one.
	doc.Servers = openapi3.Servers{{URL: s.URL}}
	return doc
}

func validateResponse(t *testing.T, router routers.Router, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	u, _ := url.Parse(req.URL.String())
	routed := req.Clone(context.Background())
	routed.URL = u
	route, params, err := router.FindRoute(routed)
	if err != nil {
		t.Fatalf("no documented route for %s %s: %v", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{
		Request: routed, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("response does not match the OpenAPI document: %v\nbody: %.500s", err, body)
	}
}
