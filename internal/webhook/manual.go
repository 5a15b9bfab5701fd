package webhook

import (
	"errors"
	"sync"

	"github.com/momopay/momopay/internal/payment"
)

// ManualPerEndpoint bounds the sends a person asks for (test events and
// re-sends) that wait on one endpoint's answer at once, in one process.
// The dispatcher bounds its own attempts per endpoint and per merchant;
// without this, a few hundred test events posted at once to an endpoint
// that never answers held a few hundred connections and goroutines for
// ten seconds each (the DoS audit saw 470 connections to one endpoint).
// A person waits on one answer at a time; two leave room for a second tab.
const ManualPerEndpoint = 2

// ErrManualBusy refuses a test event or a re-send while ManualPerEndpoint
// others to the same endpoint wait for its answer.
var ErrManualBusy = errors.New("sends asked by hand to this endpoint are already waiting for its answer")

// manualSends counts the sends asked by hand in flight, per endpoint.
type manualSends struct {
	mu         sync.Mutex
	byEndpoint map[string]int
}

// enter takes a place for a send to endpointID, or refuses with
// ErrManualBusy (a payment.EUNPROCESSABLE refusal); leave gives it back.
func (m *manualSends) enter(endpointID string) (leave func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byEndpoint[endpointID] >= ManualPerEndpoint {
		return nil, payment.Refuse(payment.EUNPROCESSABLE, ErrManualBusy,
			"%d test events or re-sends to this endpoint are already waiting for its answer (up to %s): try again when they end", ManualPerEndpoint, DefaultTimeout)
	}
	if m.byEndpoint == nil {
		m.byEndpoint = map[string]int{}
	}
	m.byEndpoint[endpointID]++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.byEndpoint[endpointID]--; m.byEndpoint[endpointID] <= 0 {
			delete(m.byEndpoint, endpointID)
		}
	}, nil
}
