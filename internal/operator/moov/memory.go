package moov

import (
	"sync"
	"time"
)

// pushMemory remembers, per internal_ref, the referenceid Moov answered to
// the push, which getTransactionStatus expects.
//
// It lives in this process only, for memoryTTL: a poll served by another
// instance, or after a restart, asks Moov by our internal_ref instead
// (which Moov may not know: the payment then ends TIMEOUT at expires_at).
type pushMemory struct {
	mu   sync.Mutex
	byID map[string]pushRecord
	last time.Time // of the last pruning
}

type pushRecord struct {
	referenceID string
	at          time.Time
}

// memoryTTL outlives any PENDING window (5 minutes at most) and the expiry
// check's last enquiry.
const memoryTTL = 15 * time.Minute

func (m *pushMemory) taken(ref, referenceID string, now time.Time) {
	m.put(ref, pushRecord{referenceID: referenceID, at: now})
}

func (m *pushMemory) put(ref string, r pushRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = map[string]pushRecord{}
	}
	if r.at.Sub(m.last) > time.Minute {
		for k, v := range m.byID {
			if r.at.Sub(v.at) > memoryTTL {
				delete(m.byID, k)
			}
		}
		m.last = r.at
	}
	m.byID[ref] = r
}

// lookup returns the referenceid of ref's push, or "".
func (m *pushMemory) lookup(ref string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[ref].referenceID
}
