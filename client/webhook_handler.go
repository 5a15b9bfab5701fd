package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// MaxWebhookBodyBytes bounds how much of a delivery the handler reads;
// momopay events are a few hundred bytes, so anything larger is not ours.
const MaxWebhookBodyBytes = 1 << 20

// DeliveryStore remembers which deliveries were processed, so a delivery
// retried by the service (or re-sent from the dashboard) runs the merchant's
// code once. In production back it with the merchant's database, ideally in
// the same transaction as the work fn does.
type DeliveryStore interface {
	// Seen reports whether the delivery id was marked before.
	Seen(ctx context.Context, deliveryID string) (bool, error)
	// Mark records that the delivery id was processed successfully.
	Mark(ctx context.Context, deliveryID string) error
}

// WebhookHandler returns an http.Handler for a webhook endpoint. It reads the
// raw body (up to MaxWebhookBodyBytes), verifies it with VerifyWebhook, skips
// delivery ids already in store, calls fn, and marks the id only after fn
// succeeds. Its answers tell the service what to do next:
//
//   - 200: processed, or already processed earlier (do not send again);
//   - 401: the signature or timestamp does not verify;
//   - 409: the same delivery is being processed right now (send again later);
//   - 500: fn or the store failed; the service retries on its schedule.
//
// store may be nil to process every delivery. Deliveries are deduplicated on
// Event.DeliveryID, the signed webhook-id, which every verified delivery
// carries. fn should still be idempotent per transaction id: a store shared
// by several instances can let two copies through at the same time.
//
// It panics if secret is empty or fn is nil, so a missing configuration value
// stops the receiver at start-up instead of refusing every delivery.
func WebhookHandler(secret string, store DeliveryStore, fn func(ctx context.Context, ev *Event) error) http.Handler {
	if secret == "" || fn == nil {
		panic("momopay: WebhookHandler needs the endpoint's webhook secret and a function")
	}
	var inFlight sync.Map // delivery id → struct{}: stops concurrent copies in this process
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBodyBytes))
		if err != nil {
			if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		ev, err := VerifyWebhook(secret, body, r.Header)
		switch {
		case errors.Is(err, ErrInvalidSignature), errors.Is(err, ErrTimestampTooOld), errors.Is(err, ErrTimestampTooNew):
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		case err != nil:
			http.Error(w, "malformed event", http.StatusBadRequest)
			return
		}

		ctx, id := r.Context(), ev.DeliveryID
		dedupe := store != nil
		if dedupe {
			if _, busy := inFlight.LoadOrStore(id, struct{}{}); busy {
				http.Error(w, "delivery in progress", http.StatusConflict)
				return
			}
			defer inFlight.Delete(id)
			seen, err := store.Seen(ctx, id)
			if err != nil {
				http.Error(w, "delivery store unavailable", http.StatusInternalServerError)
				return
			}
			if seen {
				w.WriteHeader(http.StatusOK)
				return
			}
		}
		if err := fn(ctx, ev); err != nil {
			http.Error(w, "processing failed", http.StatusInternalServerError)
			return
		}
		if dedupe {
			// fn has done its work: answering 500 here would only make the
			// service send it again, so a failed Mark is not reported.
			_ = store.Mark(ctx, id)
		}
		w.WriteHeader(http.StatusOK)
	})
}

// memoryRetention is how long MemoryDeliveryStore remembers an id: past the
// 2h36m retry schedule, with room for manual re-sends from the dashboard.
const memoryRetention = 7 * 24 * time.Hour

// MemoryDeliveryStore is a DeliveryStore in process memory, for tests and
// single-instance receivers. It forgets on restart and is not shared between
// instances; ids are kept for 7 days.
type MemoryDeliveryStore struct {
	mu    sync.Mutex
	ids   map[string]time.Time
	marks int
	now   func() time.Time
}

// NewMemoryDeliveryStore returns an empty MemoryDeliveryStore.
func NewMemoryDeliveryStore() *MemoryDeliveryStore {
	return &MemoryDeliveryStore{ids: make(map[string]time.Time), now: time.Now}
}

// Seen reports whether id was marked within the retention period.
func (s *MemoryDeliveryStore) Seen(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.ids[id]
	return ok && s.now().Sub(at) < memoryRetention, nil
}

// Mark records id, and now and then drops ids past the retention period so
// a long-running receiver does not grow without bound.
func (s *MemoryDeliveryStore) Mark(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.ids[id] = now
	if s.marks++; s.marks%1024 == 0 {
		for k, at := range s.ids {
			if now.Sub(at) >= memoryRetention {
				delete(s.ids, k)
			}
		}
	}
	return nil
}
