package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/momopay/momopay/client"
)

// receiver is a webhook endpoint under test and what its function saw.
type receiver struct {
	srv   *httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	last  *client.Event
}

func newReceiver(t *testing.T, store client.DeliveryStore, fn func(*client.Event) error) *receiver {
	t.Helper()
	r := &receiver{}
	h := client.WebhookHandler(testSecret, store, func(_ context.Context, ev *client.Event) error {
		r.calls.Add(1)
		r.mu.Lock()
		r.last = ev
		r.mu.Unlock()
		if fn != nil {
			return fn(ev)
		}
		return nil
	})
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	return r
}

// deliver posts body with headers signed now, as the service would.
func (r *receiver) deliver(t *testing.T, deliveryID string, body []byte, edit func(http.Header)) int {
	t.Helper()
	h := signedHeaders(t, testSecret, deliveryID, time.Now(), body)
	if edit != nil {
		edit(h)
	}
	req, err := http.NewRequest(http.MethodPost, r.srv.URL, bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0
	}
	req.Header = h
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		t.Error(err) // not Fatal: deliver also runs on other goroutines
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestWebhookHandlerProcessesOnce(t *testing.T) {
	t.Parallel()
	store := client.NewMemoryDeliveryStore()
	r := newReceiver(t, store, nil)
	for i := range 3 {
		if code := r.deliver(t, "d-1", []byte(testBody), nil); code != http.StatusOK {
			t.Fatalf("delivery %d: status %d, want 200", i+1, code)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Errorf("fn called %d times for one delivery id, want 1", n)
	}
	if r.last.Data.Reference != "order-7" || r.last.DeliveryID != "d-1" {
		t.Errorf("fn got %+v", r.last)
	}
	if seen, _ := store.Seen(context.Background(), "d-1"); !seen {
		t.Error("delivery not marked in the store")
	}
	if code := r.deliver(t, "d-2", []byte(testBody), nil); code != http.StatusOK || r.calls.Load() != 2 {
		t.Errorf("a new delivery id: status %d, calls %d; want 200 and 2", code, r.calls.Load())
	}
}

func TestWebhookHandlerRejectsUnverified(t *testing.T) {
	t.Parallel()
	store := client.NewMemoryDeliveryStore()
	r := newReceiver(t, store, nil)
	tests := map[string]func(http.Header){
		"tampered signature": func(h http.Header) {
			h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("0"), 32)))
		},
		"no signature": func(h http.Header) { h.Del("webhook-signature") },
		"replayed": func(h http.Header) {
			old := signedHeaders(t, testSecret, "d-1", time.Now().Add(-time.Hour), []byte(testBody))
			for k, v := range old {
				h[k] = v
			}
		},
	}
	for name, edit := range tests {
		if code := r.deliver(t, "d-1", []byte(testBody), edit); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, code)
		}
	}
	if n := r.calls.Load(); n != 0 {
		t.Errorf("fn called %d times for unverified deliveries", n)
	}
	if seen, _ := store.Seen(context.Background(), "d-1"); seen {
		t.Error("an unverified delivery was marked as processed")
	}
}

// A delivery captured and sent again within the tolerance, under a made-up
// X-Service-Delivery-Id or without the Standard Webhooks headers, must not
// get past deduplication: fn runs once.
func TestWebhookHandlerRefusesDisguisedReplays(t *testing.T) {
	t.Parallel()
	r := newReceiver(t, client.NewMemoryDeliveryStore(), nil)
	captured := signedHeaders(t, testSecret, "d-1", time.Now(), []byte(testBody))
	replay := func(edit func(http.Header)) func(http.Header) {
		return func(h http.Header) {
			for k := range h {
				delete(h, k)
			}
			for k, v := range captured.Clone() {
				h[k] = v
			}
			edit(h)
		}
	}
	if code := r.deliver(t, "d-1", []byte(testBody), replay(func(http.Header) {})); code != http.StatusOK {
		t.Fatalf("the delivery: status %d, want 200", code)
	}
	tests := map[string]func(http.Header){
		"forged X-Service-Delivery-Id": func(h http.Header) { h.Set("X-Service-Delivery-Id", "d-forged") },
		"Standard Webhooks headers stripped": func(h http.Header) {
			h.Set("X-Service-Delivery-Id", "d-stripped")
			h.Del("webhook-id")
			h.Del("webhook-timestamp")
			h.Del("webhook-signature")
		},
	}
	for name, edit := range tests {
		if code := r.deliver(t, "d-1", []byte(testBody), replay(edit)); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, code)
		}
	}
	if n := r.calls.Load(); n != 1 {
		t.Errorf("fn called %d times, want once: a replay got past deduplication", n)
	}
}

func TestWebhookHandlerRetriesAfterFailure(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	fail.Store(true)
	r := newReceiver(t, client.NewMemoryDeliveryStore(), func(*client.Event) error {
		if fail.Load() {
			return errors.New("database down")
		}
		return nil
	})
	if code := r.deliver(t, "d-1", []byte(testBody), nil); code != http.StatusInternalServerError {
		t.Fatalf("failing fn: status %d, want 500 so the service retries", code)
	}
	fail.Store(false)
	if code := r.deliver(t, "d-1", []byte(testBody), nil); code != http.StatusOK {
		t.Fatalf("retry: status %d, want 200", code)
	}
	if n := r.calls.Load(); n != 2 {
		t.Errorf("fn called %d times, want 2: a failed attempt must not be marked", n)
	}
}

func TestWebhookHandlerConcurrentCopies(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	r := newReceiver(t, client.NewMemoryDeliveryStore(), func(*client.Event) error {
		close(entered)
		<-release
		return nil
	})
	first := make(chan int)
	go func() { first <- r.deliver(t, "d-1", []byte(testBody), nil) }()
	<-entered
	if code := r.deliver(t, "d-1", []byte(testBody), nil); code != http.StatusConflict {
		t.Errorf("copy during processing: status %d, want 409", code)
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("first copy: status %d", code)
	}
	if n := r.calls.Load(); n != 1 {
		t.Errorf("fn called %d times, want 1", n)
	}
}

// brokenStore fails every lookup, like a database that is down.
type brokenStore struct{}

func (brokenStore) Seen(context.Context, string) (bool, error) { return false, errors.New("down") }
func (brokenStore) Mark(context.Context, string) error         { return errors.New("down") }

func TestWebhookHandlerEdges(t *testing.T) {
	t.Parallel()
	t.Run("store down answers 500 without calling fn", func(t *testing.T) {
		r := newReceiver(t, brokenStore{}, nil)
		if code := r.deliver(t, "d-1", []byte(testBody), nil); code != http.StatusInternalServerError || r.calls.Load() != 0 {
			t.Errorf("status %d, calls %d", code, r.calls.Load())
		}
	})
	t.Run("nil store processes every copy", func(t *testing.T) {
		r := newReceiver(t, nil, nil)
		r.deliver(t, "d-1", []byte(testBody), nil)
		if code := r.deliver(t, "d-1", []byte(testBody), nil); code != http.StatusOK || r.calls.Load() != 2 {
			t.Errorf("status %d, calls %d", code, r.calls.Load())
		}
	})
	t.Run("body over 1 MiB", func(t *testing.T) {
		r := newReceiver(t, nil, nil)
		big := append([]byte(testBody), bytes.Repeat([]byte(" "), client.MaxWebhookBodyBytes)...)
		if code := r.deliver(t, "d-1", big, nil); code != http.StatusRequestEntityTooLarge || r.calls.Load() != 0 {
			t.Errorf("status %d, calls %d", code, r.calls.Load())
		}
	})
	t.Run("GET", func(t *testing.T) {
		r := newReceiver(t, nil, nil)
		resp, err := http.Get(r.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("status %d, want 405", resp.StatusCode)
		}
	})
}

func TestWebhookHandlerNeedsSecret(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("no panic for an empty secret")
		}
	}()
	client.WebhookHandler("", nil, func(context.Context, *client.Event) error { return nil })
}

func TestMemoryDeliveryStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := client.NewMemoryDeliveryStore()
	if seen, err := s.Seen(ctx, "a"); seen || err != nil {
		t.Fatalf("empty store: seen=%v err=%v", seen, err)
	}
	if err := s.Mark(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if seen, _ := s.Seen(ctx, "a"); !seen {
		t.Error("marked id not seen")
	}
	if seen, _ := s.Seen(ctx, "b"); seen {
		t.Error("unmarked id seen")
	}
}
