package payment

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Unverified callbacks (hints) are an operator's callbacks that could not
// be checked, and anyone who knows a payment's internal_ref can send one.
// Each makes the service ask the operator, so what they can cost is
// bounded three ways: one hint per payment per hintCooldown makes an
// enquiry (the rest are dropped; the payment's own polls still ask), at
// most maxHintEnquiries run at once, and the drops are logged at most once
// a second.
const (
	hintCooldown     = 10 * time.Second
	maxHintEnquiries = 16
	// maxHintMemory is how many payments' last hints are remembered before
	// the expired ones are forgotten.
	maxHintMemory = 4096
)

// hints is the state of that bounding, one per Service.
type hints struct {
	mu      sync.Mutex
	last    map[string]time.Time // transaction id -> when its last hint made an enquiry
	slots   chan struct{}
	dropped rate.Sometimes
}

func newHints() *hints {
	return &hints{last: map[string]time.Time{}, slots: make(chan struct{}, maxHintEnquiries),
		dropped: rate.Sometimes{First: 1, Interval: time.Second}}
}

// due reports whether a hint about transaction id heard at now may make an
// enquiry, and if so records it.
func (h *hints) due(id string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if at, ok := h.last[id]; ok && now.Sub(at) < hintCooldown && !now.Before(at) {
		return false
	}
	if len(h.last) >= maxHintMemory {
		for k, at := range h.last {
			if now.Sub(at) >= hintCooldown {
				delete(h.last, k)
			}
		}
	}
	h.last[id] = now
	return true
}

// hint asks the operator about t for an unverified callback, within the
// bounds above.
func (s *Service) hint(ctx context.Context, op Operator, t *Transaction) error {
	if !s.hints.due(t.ID, s.now()) {
		s.log.Debug("unverified callback: the payment was asked about moments ago", "transaction_id", t.ID, "operator", op)
		return nil
	}
	select {
	case s.hints.slots <- struct{}{}:
		defer func() { <-s.hints.slots }()
	default:
		s.hints.dropped.Do(func() {
			s.log.Warn("unverified callbacks dropped: too many enquiries in flight; status polls settle their payments", "transaction_id", t.ID, "operator", op)
		})
		return nil
	}
	s.log.Info("unverified callback: asking the operator", "transaction_id", t.ID, "operator", op)
	_, _, err := s.Enquire(context.WithoutCancel(ctx), t.MerchantID, t.ID, SourceCallback)
	return err
}
