package client_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/testserver"
)

func testListAndIterate(t *testing.T, srv *testserver.Server) {
	c, tr := newMerchant(t, srv)
	ctx := context.Background()
	var created []*client.Transaction
	for i := range 25 {
		p := payment(phoneNoAnswer)
		if i%5 == 0 {
			p.Operator = client.OperatorMoov
		}
		tx, err := c.CreateTransaction(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, tx)
	}
	newestFirst := func(from, to int) []string { // ids of created[from..to], newest first
		var ids []string
		for i := to; i >= from; i-- {
			ids = append(ids, created[i].ID)
		}
		return ids
	}

	before := len(tr.log())
	var ids []string
	for tx, err := range c.AllTransactions(ctx, client.ListParams{PerPage: 10}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tx.ID)
	}
	if fmt.Sprint(ids) != fmt.Sprint(newestFirst(0, 24)) {
		t.Errorf("iterated %d ids %v\nwant newest first %v", len(ids), ids, newestFirst(0, 24))
	}
	if n := len(tr.log()) - before; n != 3 {
		t.Errorf("iterator made %d requests for 25 items at 10 per page, want 3", n)
	}

	before, n := len(tr.log()), 0
	for range c.AllTransactions(ctx, client.ListParams{PerPage: 10}) {
		if n++; n == 12 {
			break
		}
	}
	if got := len(tr.log()) - before; got != 2 {
		t.Errorf("breaking after 12 items made %d requests, want 2", got)
	}

	page2, err := c.ListTransactions(ctx, client.ListParams{Page: 2, PerPage: 10})
	if err != nil {
		t.Fatal(err)
	}
	if page2.Pagination != (client.Pagination{Page: 2, PerPage: 10, Total: 25, TotalPages: 3}) || len(page2.Data) != 10 {
		t.Errorf("page 2: pagination %+v with %d items", page2.Pagination, len(page2.Data))
	}
	if item := page2.Data[0]; item.ID != created[14].ID || item.Description != nil || !item.ExpiresAt.IsZero() ||
		item.InternalRef != created[14].InternalRef || item.Status != client.StatusPending {
		t.Errorf("page 2 starts with %+v, want %s without description or expires_at", item, created[14].ID)
	}
	past, err := c.ListTransactions(ctx, client.ListParams{Page: 4, PerPage: 10})
	if err != nil || len(past.Data) != 0 || past.Pagination.Total != 25 {
		t.Errorf("page past the end: %+v, %v; want empty data with true totals", past, err)
	}

	count := func(p client.ListParams) int {
		t.Helper()
		l, err := c.ListTransactions(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return l.Pagination.Total
	}
	if n := count(client.ListParams{Operator: client.OperatorMoov}); n != 5 {
		t.Errorf("operator=MOOV: %d, want 5", n)
	}
	if n := count(client.ListParams{Status: client.StatusPending}); n != 25 {
		t.Errorf("status=PENDING: %d, want 25", n)
	}
	if n := count(client.ListParams{Status: client.StatusSuccess}); n != 0 {
		t.Errorf("status=SUCCESS: %d, want 0", n)
	}
	if n := count(client.ListParams{From: time.Now().Add(time.Hour)}); n != 0 {
		t.Errorf("from an hour ahead: %d, want 0", n)
	}

	var window []string
	for tx, err := range c.AllTransactions(ctx, client.ListParams{
		From: created[10].CreatedAt, To: created[19].CreatedAt, PerPage: 3,
	}) {
		if err != nil {
			t.Fatal(err)
		}
		window = append(window, tx.ID)
	}
	if fmt.Sprint(window) != fmt.Sprint(newestFirst(10, 19)) {
		t.Errorf("from/to (inclusive) gave %v, want %v", window, newestFirst(10, 19))
	}
}

// testIterateWhileSettling walks the PENDING payments and settles each one
// as it is yielded, so every item leaves the filter during the walk, as when
// payments settle while a reconciliation job runs. Counting pages by offset
// would then skip a page's worth of items each time; the walk must still
// see every payment once, newest first.
func testIterateWhileSettling(t *testing.T, srv *testserver.Server) {
	merchantID, key := srv.NewMerchant(t)
	tr := &transport{}
	c := newClient(srv, key, tr)
	ctx := context.Background()
	var want []string // newest first
	for range 9 {
		tx, err := c.CreateTransaction(ctx, payment(phoneByHand))
		if err != nil {
			t.Fatal(err)
		}
		want = append([]string{tx.ID}, want...)
	}

	var got []string
	for tx, err := range c.AllTransactions(ctx, client.ListParams{Status: client.StatusPending, PerPage: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tx.ID)
		settled, _, err := srv.App.AnswerSandboxPayment(ctx, merchantID, tx.ID, true)
		if err != nil || settled.Status != "SUCCESS" {
			t.Fatalf("settle %s: %+v, %v", tx.ID, settled, err)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("walked %d PENDING payments %v\nwant all %d, newest first %v\nrequests: %v", len(got), got, len(want), want, tr.log())
	}
}

// testIterateWithinOneInstant walks a list whose payments all share one
// created_at (the server's clock stands still), where ending each request at
// the oldest item seen makes no progress: the walk must step through the
// instant by page number, seeing each payment once, and end.
func testIterateWithinOneInstant(t *testing.T, engine string) {
	clock := testserver.NewClock(time.Now().UTC().Truncate(time.Second))
	srv := testserver.Start(t, testserver.Options{DB: engine, Now: clock.Now})
	c, tr := newMerchant(t, srv)
	ctx := context.Background()
	var want []string
	for range 7 {
		tx, err := c.CreateTransaction(ctx, payment(phoneByHand))
		if err != nil {
			t.Fatal(err)
		}
		if !tx.CreatedAt.Equal(clock.Now()) {
			t.Fatalf("created_at %v, want the stopped clock's %v", tx.CreatedAt, clock.Now())
		}
		want = append(want, tx.ID)
	}
	slices.Sort(want)
	slices.Reverse(want) // one instant: by id, descending

	before := len(tr.log())
	var got []string
	for tx, err := range c.AllTransactions(ctx, client.ListParams{PerPage: 3}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tx.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("walked %v\nwant %v", got, want)
	}
	if n := len(tr.log()) - before; n > 4 {
		t.Errorf("%d requests for 7 items at 3 per page: %v", n, tr.log()[before:])
	}
}
