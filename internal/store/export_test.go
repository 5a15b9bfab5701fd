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

// QueuedWrites is how many of a payment's writes (creates, pushes taken,
// settlements) wait for the next SQLite batch (0 where they are not
// batched).
func (s *Transactions) QueuedWrites() int {
	if s.creates == nil {
		return 0
	}
	return queueLen(s.creates) + queueLen(s.pushes) + queueLen(s.settlements)
}

func queueLen[In, Out any](b *Batcher[In, Out]) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}
