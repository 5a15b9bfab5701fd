package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

func TestEndpoints(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks

		urls := []string{"http://127.0.0.1:9000/hooks", "https://merchant.example/webhooks?shop=1", "http://localhost:3000/"}
		var created []*webhook.Endpoint
		for _, u := range urls {
			e, err := s.CreateEndpoint(ctx, f.merchant, u)
			if err != nil {
				t.Fatalf("create %s: %v", u, err)
			}
			if e.URL != u || !e.Enabled || !strings.HasPrefix(e.Secret, "whsec_") || len(e.Secret) != len("whsec_")+44 || !e.CreatedAt.Equal(f.clock.Now()) {
				t.Fatalf("created %+v", e)
			}
			created = append(created, e)
			f.clock.Advance(time.Second) // listing is oldest first
		}
		if created[0].Secret == created[1].Secret {
			t.Fatal("two endpoints share a secret")
		}

		list, err := s.Endpoints(ctx, f.merchant)
		if err != nil || len(list) != 3 {
			t.Fatalf("list: %d endpoints, %v", len(list), err)
		}
		for i, e := range list {
			if e.ID != created[i].ID || e.URL != urls[i] || !e.Enabled || e.Secret != "" {
				t.Errorf("listed %+v, want %s without secret", e, urls[i])
			}
		}
		js, _ := json.Marshal(list)
		if strings.Contains(string(js), "whsec_") || strings.Contains(string(js), "secret") {
			t.Errorf("listing leaks secrets: %s", js)
		}

		if _, err := s.SetEndpointEnabled(ctx, f.merchant, created[0].ID, false); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteEndpoint(ctx, f.merchant, created[1].ID); err != nil {
			t.Fatal(err)
		}
		list, _ = s.Endpoints(ctx, f.merchant)
		if len(list) != 2 || list[0].ID != created[0].ID || list[0].Enabled || list[1].ID != created[2].ID || !list[1].Enabled {
			t.Fatalf("after disable and delete: %+v", list)
		}
		for _, call := range []error{
			s.DeleteEndpoint(ctx, f.merchant, created[1].ID),
			second(s.SetEndpointEnabled(ctx, f.merchant, created[1].ID, false)),
			second(s.Test(ctx, f.merchant, created[1].ID)),
		} {
			if !errors.Is(call, webhook.ErrEndpointNotFound) {
				t.Errorf("on a deleted endpoint: %v, want not found", call)
			}
		}
		// The deleted row is kept for its history.
		var n int
		f.app.DB.QueryRow(`SELECT COUNT(*) FROM webhook_endpoints WHERE id = $1 AND deleted_at IS NOT NULL`, created[1].ID).Scan(&n)
		if n != 1 {
			t.Errorf("deleted endpoint row: %d, want kept with deleted_at", n)
		}
	})
}

func TestCreateEndpointValidates(t *testing.T) {
	t.Parallel()
	f := setup(t, "sqlite")
	live := f.service(true, 0)
	tests := []struct {
		svc    *webhook.Service
		url    string
		want   string
		reason error
	}{
		{f.app.Webhooks, "", "required", webhook.ErrURLRequired},
		{f.app.Webhooks, "ftp://example.com/", "http:// or https://", webhook.ErrURLScheme},
		{f.app.Webhooks, "https://user:pw@example.com/", "user name", webhook.ErrURLUserinfo},
		{f.app.Webhooks, "http://127.0.0.1:9/q?x=a b", "spaces", webhook.ErrURLSpace},
		{f.app.Webhooks, "http://10.0.0.1/hook", "private", webhook.ErrURLPrivateLocal},
		{live, "http://merchant.example/hook", "https", webhook.ErrURLNotHTTPS},
		{live, "https://127.0.0.1/hook", "private", webhook.ErrURLNonPublic},
		{live, "https://10.0.0.1/hook", "private", webhook.ErrURLNonPublic},
		{live, "https://localhost:8443/hook", "localhost", webhook.ErrURLLocalhost},
		{live, "https://169.254.169.254/latest/meta-data", "private", webhook.ErrURLNonPublic},
	}
	for _, tt := range tests {
		e, err := tt.svc.CreateEndpoint(context.Background(), f.merchant, tt.url)
		var pe *payment.Error
		if e != nil || !errors.As(err, &pe) || pe.Code != payment.EINVALID || !strings.Contains(pe.Fields["url"], tt.want) {
			t.Errorf("create %q: %v, %v; want EINVALID with url field about %q", tt.url, e, err, tt.want)
		}
		// The dashboard words the refusal by its reason.
		if !errors.Is(err, tt.reason) {
			t.Errorf("create %q: %v does not carry the reason %q", tt.url, err, tt.reason)
		}
	}
	if list, _ := f.app.Webhooks.Endpoints(context.Background(), f.merchant); len(list) != 0 {
		t.Errorf("refused URLs left %d endpoints", len(list))
	}
}

// TestCreateEndpointOnce: a request sent again adds nothing and gets the
// first endpoint without its secret, even once that endpoint is deleted;
// another merchant's request with the same token adds its own; two sent at
// once add one.
func TestCreateEndpointOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		const token = "ADDTOKENADDTOKENADDTOKENAD"
		first, err := s.CreateEndpointOnce(ctx, f.merchant, "https://merchant.example/hooks", token)
		if err != nil || !strings.HasPrefix(first.Secret, "whsec_") {
			t.Fatalf("first: %+v %v", first, err)
		}
		// Sent again, even with another URL (a changed field), it adds
		// nothing.
		for _, u := range []string{"https://merchant.example/hooks", "https://merchant.example/other"} {
			again, err := s.CreateEndpointOnce(ctx, f.merchant, u, token)
			if !errors.Is(err, webhook.ErrEndpointAdded) || again == nil || again.ID != first.ID || again.Secret != "" || again.URL != first.URL {
				t.Fatalf("sent again with %s: %+v %v", u, again, err)
			}
		}
		other := f.newMerchant(t)
		theirs, err := s.CreateEndpointOnce(ctx, other, "https://merchant.example/hooks", token)
		if err != nil || theirs.ID == first.ID || theirs.Secret == "" {
			t.Fatalf("another merchant, same token: %+v %v", theirs, err)
		}
		if err := s.DeleteEndpoint(ctx, f.merchant, first.ID); err != nil {
			t.Fatal(err)
		}
		if again, err := s.CreateEndpointOnce(ctx, f.merchant, "https://merchant.example/hooks", token); !errors.Is(err, webhook.ErrEndpointAdded) || again.Secret != "" {
			t.Fatalf("sent again after a delete: %+v %v", again, err)
		}

		// Two at once: one adds, the other is told it was added.
		const twice = "TWICETOKENTWICETOKENTWICET"
		errs := make(chan error, 2)
		for range 2 {
			go func() {
				_, err := s.CreateEndpointOnce(ctx, f.merchant, "https://merchant.example/twice", twice)
				errs <- err
			}()
		}
		var added, told int
		for range 2 {
			switch err := <-errs; {
			case err == nil:
				added++
			case errors.Is(err, webhook.ErrEndpointAdded), payment.ErrorCode(err) == payment.EUNPROCESSABLE:
				told++
			default:
				t.Fatalf("sent twice at once: %v", err)
			}
		}
		if list, _ := s.Endpoints(ctx, f.merchant); added != 1 || told != 1 || len(list) != 1 {
			t.Fatalf("sent twice at once: %d added, %d told, %d endpoints", added, told, len(list))
		}
	})
}

// TestEndpointLimit: a merchant has at most MaxEndpoints endpoints, even
// when many are added at once; a deleted one makes room, and another
// merchant's count is its own. Without the bound an audit registered
// 2,000, and each settlement queued a delivery to every one of them.
func TestEndpointLimit(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		rc := newReceiver(t, nil)
		// Twice the bound, all at once: exactly the bound get in.
		var wg sync.WaitGroup
		errs := make(chan error, 2*webhook.MaxEndpoints)
		for i := range 2 * webhook.MaxEndpoints {
			wg.Go(func() {
				_, err := f.app.Webhooks.CreateEndpoint(ctx, f.merchant, fmt.Sprintf("%s/e%d", rc.URL, i))
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		refused := 0
		for err := range errs {
			switch {
			case err == nil:
			case errors.Is(err, webhook.ErrTooManyEndpoints) && code(err) == payment.EUNPROCESSABLE:
				refused++
			default:
				t.Fatalf("add: %v", err)
			}
		}
		list, err := f.app.Webhooks.Endpoints(ctx, f.merchant)
		if err != nil || len(list) != webhook.MaxEndpoints || refused != webhook.MaxEndpoints {
			t.Fatalf("%d endpoints kept and %d refused of %d added at once, want %d each (%v)", len(list), refused, 2*webhook.MaxEndpoints, webhook.MaxEndpoints, err)
		}
		// Disabled ones still count; a deleted one makes room.
		if _, err := f.app.Webhooks.SetEndpointEnabled(ctx, f.merchant, list[0].ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := f.app.Webhooks.CreateEndpoint(ctx, f.merchant, rc.URL+"/more"); !errors.Is(err, webhook.ErrTooManyEndpoints) {
			t.Fatalf("one more beside a disabled one: %v", err)
		}
		if err := f.app.Webhooks.DeleteEndpoint(ctx, f.merchant, list[1].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.app.Webhooks.CreateEndpoint(ctx, f.merchant, rc.URL+"/more"); err != nil {
			t.Fatalf("after a delete: %v", err)
		}
		if _, err := f.app.Webhooks.CreateEndpoint(ctx, f.newMerchant(t), rc.URL+"/theirs"); err != nil {
			t.Fatalf("another merchant: %v", err)
		}
	})
}
