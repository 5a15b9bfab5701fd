package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/testserver"
)

// response is an HTTP answer with its body decoded.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

// errorField returns error.<name> of an error envelope.
func (r response) errorField(name string) any {
	e, _ := r.body["error"].(map[string]any)
	return e[name]
}

func (r response) fields() map[string]any {
	f, _ := r.errorField("fields").(map[string]any)
	return f
}

// do sends one request with an API key and a JSON body (a string is sent
// as is, anything else is marshalled).
func do(t testing.TB, s *testserver.Server, method, path, key string, body any) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return send(t, req)
}

func send(t testing.TB, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %v: %s", req.Method, req.URL.Path, err, raw)
		}
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: no X-Request-Id header", req.Method, req.URL.Path)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s %s: X-Content-Type-Options %q, want nosniff", req.Method, req.URL.Path, resp.Header.Get("X-Content-Type-Options"))
	}
	return r
}

var refCounter atomic.Int64

// newRef returns a reference no other test uses.
func newRef() string { return fmt.Sprintf("order-%d", refCounter.Add(1)) }

// newPayment returns a valid create body, changed by the given fields.
func newPayment(changes map[string]any) map[string]any {
	b := map[string]any{
		"reference": newRef(), "amount": 1500, "currency": "XAF", "operator": "AIRTEL",
		"phone_number": "+23566000000", "description": "Order",
	}
	for k, v := range changes {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return b
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newPaymentRequest(ref, op string) payment.CreateRequest {
	return payment.CreateRequest{Reference: ref, Amount: 1000, Currency: "XAF", Operator: op, PhoneNumber: "+23566000000"}
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
