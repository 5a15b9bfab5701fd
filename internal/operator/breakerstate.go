package operator

import "github.com/sony/gobreaker/v2"

// Circuits counts the circuits of a breaker by state. A per-merchant
// breaker forgets a healthy merchant's circuit, so Closed counts only the
// circuits it still keeps; Open and HalfOpen are what matter.
type Circuits struct {
	Closed, HalfOpen, Open int
}

// BreakerCircuits reports the circuits of an Operator made by WithBreaker;
// ok is false for any other Operator. It is read when metrics are scraped.
func BreakerCircuits(op Operator) (c Circuits, ok bool) {
	b, ok := op.(*breaker)
	if !ok {
		return Circuits{}, false
	}
	b.mu.Lock()
	all := make([]*circuit, 0, len(b.circuits))
	for _, c := range b.circuits {
		all = append(all, c)
	}
	b.mu.Unlock()
	// State may move an open circuit to half-open, which calls
	// OnStateChange, which takes b.mu: so it is called without it.
	for _, cc := range all {
		switch cc.cb.State() {
		case gobreaker.StateOpen:
			c.Open++
		case gobreaker.StateHalfOpen:
			c.HalfOpen++
		default:
			c.Closed++
		}
	}
	return c, true
}
