package client_test

import (
	"context"
	"fmt"
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
