package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/momopay/momopay/internal/payment"
)

// What the dashboard reads of transactions beyond the API's list: a
// search by reference, an export read in bounded batches, and the sandbox
// phone's pending requests. Every query is scoped by merchant.

// ByReference returns the merchant's transaction with reference, or
// ErrNotFound. References are unique per merchant, so this is one index
// lookup; a transaction whose push is in flight is not shown, as in lists.
func (s *Transactions) ByReference(ctx context.Context, merchantID, reference string) (*payment.Transaction, error) {
	if !payment.ValidID(merchantID) || !payment.ValidReference(reference) {
		return nil, payment.ErrNotFound
	}
	return scanTransaction(s.db.Reader().QueryRowContext(ctx, `SELECT `+transactionColumns+`
		FROM transactions WHERE merchant_id = $1 AND reference = $2 AND NOT push_in_flight`, merchantID, reference))
}

// ExportBatch is the most rows one TransactionsBefore call reads.
const ExportBatch = 1000

// TransactionsBefore returns up to limit (at most ExportBatch) of the
// merchant's transactions matching f's status, operator, from and to,
// newest first, that come after the transaction with id before in that
// order ("" for the first batch). Reading an export batch by batch holds
// no connection between batches (SQLite has only one) and keeps memory
// flat however many rows match; rows created meanwhile are newer, so they
// neither repeat nor shift a batch.
func (s *Transactions) TransactionsBefore(ctx context.Context, merchantID string, f payment.ListFilter, before string, limit int) ([]payment.Transaction, error) {
	return s.browse(ctx, merchantID, f, before, false, limit)
}

// TransactionsAfter is TransactionsBefore the other way: up to limit of
// the transactions just newer than the one with id after, still returned
// newest first (the page before a page, for a "newer" link).
func (s *Transactions) TransactionsAfter(ctx context.Context, merchantID string, f payment.ListFilter, after string, limit int) ([]payment.Transaction, error) {
	if after == "" {
		return []payment.Transaction{}, nil
	}
	out, err := s.browse(ctx, merchantID, f, after, true, limit)
	slices.Reverse(out)
	return out, err
}

// browse reads one batch of the merchant's filtered transactions by
// position from the transaction with id from (excluded): older ones,
// newest first, or newer ones (newer), oldest first. Each batch is one
// index range scan, whatever the page's depth, and no total is counted.
func (s *Transactions) browse(ctx context.Context, merchantID string, f payment.ListFilter, from string, newer bool, limit int) ([]payment.Transaction, error) {
	out := []payment.Transaction{}
	if !payment.ValidID(merchantID) || (from != "" && !payment.ValidID(from)) {
		return out, nil
	}
	if limit <= 0 || limit > ExportBatch {
		limit = ExportBatch
	}
	where, args := s.listFilter(merchantID, f)
	cmp, order := "<", "DESC"
	if newer {
		cmp, order = ">", "ASC"
	}
	if from != "" {
		args = append(args, from)
		where = append(where, fmt.Sprintf(`(created_at, id) %s (SELECT c.created_at, c.id FROM transactions c
			WHERE c.merchant_id = $1 AND c.id = $%d)`, cmp, len(args)))
	}
	args = append(args, limit)
	rows, err := s.db.Reader().QueryContext(ctx, fmt.Sprintf(`SELECT %s FROM transactions WHERE %s
		ORDER BY created_at %s, id %s LIMIT $%d`, transactionColumns, strings.Join(where, " AND "), order, order, len(args)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTransaction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, rows.Err()
}

// MaxPendingForPayer bounds the sandbox phone's list of requests.
const MaxPendingForPayer = 20

// PendingForPayer returns the merchant's PENDING transactions addressed to
// phone whose push was taken, newest first: what the payer's phone shows.
func (s *Transactions) PendingForPayer(ctx context.Context, merchantID, phone string) ([]payment.Transaction, error) {
	out := []payment.Transaction{}
	if !payment.ValidID(merchantID) {
		return out, nil
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+transactionColumns+` FROM transactions
		WHERE merchant_id = $1 AND status = 'PENDING' AND phone_number = $2 AND NOT push_in_flight
		ORDER BY created_at DESC, id DESC LIMIT $3`, merchantID, phone, MaxPendingForPayer)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTransaction(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *t)
	}
	return out, rows.Err()
}
