package api

import (
	lru "github.com/hashicorp/golang-lru/v2"
)

// finalsKept is how many final transactions' answers a process keeps: a
// few megabytes (an answer is about 400 bytes), the final payments a busy
// merchant base reads back within minutes.
const finalsKept = 16384

// finals keeps the /v1 answers of final transactions, by merchant and id.
// A final transaction never changes again (contract §3: no column of its
// /v1 object is written after the settlement, and final rows are never
// deleted), so a kept answer is right on every instance for ever and
// needs no invalidation; a PENDING one is always read from the database.
// Reading a final payment back (a merchant confirming an order, a
// reconciliation job) then costs no query.
type finals struct {
	lru *lru.Cache[finalKey, []byte]
}

type finalKey struct{ merchantID, id string }

func newFinals() *finals {
	c, err := lru.New[finalKey, []byte](finalsKept)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &finals{lru: c}
}

func (f *finals) get(merchantID, id string) ([]byte, bool) {
	return f.lru.Get(finalKey{merchantID, id})
}

func (f *finals) keep(merchantID, id string, answer []byte) {
	f.lru.Add(finalKey{merchantID, id}, answer)
}
