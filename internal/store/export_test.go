package store

import (
	"context"
	"errors"
	"time"
)

// This file is compiled only with the tests: what they need to reach
// inside the store, and nothing the service itself calls.

// errNoListener is what WaitCacheLive returns when no listener came up.
var errNoListener = errors.New("the API key revocation listener did not connect")

// WaitCacheLive waits (up to ctx) until the revocation listener is
// connected, so that a test knows the cache is in use.
func (s *APIKeys) WaitCacheLive(ctx context.Context) error {
	for {
		s.cache.mu.Lock()
		live := s.cache.live
		s.cache.mu.Unlock()
		if live {
			return nil
		}
		select {
		case <-ctx.Done():
			return errNoListener
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// PendingWrites is how many of a payment's writes (creates, pushes
// taken, settlements) wait for a SQLite batch or for the batch in flight
// to answer them (0 where they are not batched).
func (s *Transactions) PendingWrites() int {
	if s.creates == nil {
		return 0
	}
	return pending(s.creates) + pending(s.pushes) + pending(s.settlements)
}

func pending[In, Out any](b *Batcher[In, Out]) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) + b.taken
}

// HoldPasswordSlots takes every slot of the password checks, as a flood
// of sign-ins would, until release is called.
func HoldPasswordSlots() (release func()) {
	for range hashSlots.slots {
		hashSlots.acquire(context.Background(), false)
	}
	return func() {
		for range hashSlots.slots {
			hashSlots.release()
		}
	}
}
