package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/payment"
)

// Transactions implements payment.Store.
type Transactions struct {
	db   *DB
	jobs jobs.Inserter
	// OnSettled runs inside the settling database transaction, after the
	// state change; the webhook outbox uses it to queue deliveries that
	// commit or roll back with the change. It reports whether it queued
	// any.
	OnSettled func(ctx context.Context, tx *sql.Tx, t *payment.Transaction) (queued bool, err error)
	// AfterQueued runs once a settlement whose OnSettled queued deliveries
	// has committed: the webhook dispatchers of this process look for them
	// at once, rather than at their next poll.
	AfterQueued func()
	// On SQLite only, the writes of every payment (its create, its push
	// taken, its settlement) are committed together with those of the
	// same kind waiting for the writer (EachInTx): a commit was three
	// quarters of such a write's cost.
	creates     *Batcher[*payment.Transaction, outcome[struct{}]]
	pushes      *Batcher[pushTaken, struct{}]
	settlements *Batcher[payment.Settlement, outcome[settled]]
}

// maxWriteBatch bounds the writes one SQLite transaction commits: more
// than the requests that usually wait for the writer at once, few enough
// that a batch holds the writer for milliseconds.
const maxWriteBatch = 64

// NewTransactions returns the transaction store.
func NewTransactions(db *DB, ins jobs.Inserter) *Transactions {
	s := &Transactions{db: db, jobs: ins}
	if db.Dialect == SQLite {
		s.creates = NewBatcher(maxWriteBatch, writesInTx(db, func(ctx context.Context, tx *sql.Tx, t *payment.Transaction) (struct{}, error) {
			return struct{}{}, s.create(ctx, tx, t)
		}, refusedCreate))
		s.pushes = NewBatcher(maxWriteBatch, EachInTx(db, func(ctx context.Context, tx *sql.Tx, p pushTaken) (struct{}, error) {
			return struct{}{}, s.markTaken(ctx, tx, p)
		}))
		s.settlements = NewBatcher(maxWriteBatch, writesInTx(db, s.settle, unknownSettled))
	}
	return s
}

const transactionColumns = `id, merchant_id, reference, internal_ref, amount, currency, operator,
	phone_number, description, status, created_at, updated_at, expires_at, push_in_flight,
	operator_ref, operator_code, failure_reason`

// insertColumns are those a new transaction has: what the operator says
// comes later, with Settle.
const insertColumns = `id, merchant_id, reference, internal_ref, amount, currency, operator,
	phone_number, description, status, created_at, updated_at, expires_at, push_in_flight`

func scanTransaction(row interface{ Scan(...any) error }) (*payment.Transaction, error) {
	var t payment.Transaction
	var created, updated, expires Timestamp
	var desc, opRef, opCode, reason sql.NullString
	err := row.Scan(&t.ID, &t.MerchantID, &t.Reference, &t.InternalRef, &t.Amount, &t.Currency, &t.Operator,
		&t.PhoneNumber, &desc, &t.Status, &created, &updated, &expires, &t.PushInFlight,
		&opRef, &opCode, &reason)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, payment.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if desc.Valid {
		t.Description = &desc.String
	}
	t.CreatedAt, t.UpdatedAt, t.ExpiresAt = created.Time, updated.Time, expires.Time
	t.OperatorRef, t.OperatorCode, t.FailureReason = opRef.String, opCode.String, reason.String
	return &t, nil
}

// CreateTransaction implements payment.Store. On SQLite the create joins
// those waiting for the writer (s.creates): ctx bounds its wait until its
// batch has the writer, and from then its caller waits for the answer
// whatever ctx says, as the batch may commit (Batcher.Do).
func (s *Transactions) CreateTransaction(ctx context.Context, t *payment.Transaction) error {
	if s.creates != nil {
		_, err := write(ctx, s.creates, t)
		return err
	}
	return s.db.InTx(ctx, func(tx *sql.Tx) error { return s.create(ctx, tx, t) })
}

// refusedCreate reports whether err is create's answer for a reference
// or internal_ref already taken. On SQLite such a create wrote nothing:
// its INSERT, the first of its statements, did nothing (a reference's
// ON CONFLICT) or failed alone (internal_ref), which SQLite undoes
// without ending the transaction; so in a batch it answers its own caller
// and the others commit.
func refusedCreate(err error) bool {
	return errors.Is(err, payment.ErrInternalRefTaken) || errors.Is(err, payment.ErrReferenceReleased) ||
		payment.ErrorCode(err) == payment.EDUPLICATE
}

// create writes t inside tx (insertNew), or answers why it may not: its
// internal_ref or its reference is taken.
func (s *Transactions) create(ctx context.Context, tx *sql.Tx, t *payment.Transaction) error {
	inserted, err := s.insertNew(ctx, tx, t)
	if IsUniqueViolation(err, "internal_ref") {
		return payment.ErrInternalRefTaken
	}
	if err != nil || inserted {
		return err
	}
	var existing string
	err = tx.QueryRowContext(ctx, `SELECT id FROM transactions WHERE merchant_id = $1 AND reference = $2`,
		t.MerchantID, t.Reference).Scan(&existing)
	if errors.Is(err, sql.ErrNoRows) {
		// The holder of the reference was deleted (its push refused)
		// between our INSERT meeting it and our SELECT of its id: on
		// PostgreSQL each statement sees the latest commits. The
		// reference is free again; the caller inserts again.
		return payment.ErrReferenceReleased
	}
	if err != nil {
		return err
	}
	return payment.DuplicateReference(existing)
}

// ReferenceHolder implements payment.Store: the id of the merchant's
// transaction that holds reference, its push in flight or not, or
// ErrNotFound.
func (s *Transactions) ReferenceHolder(ctx context.Context, merchantID, reference string) (string, error) {
	if !payment.ValidID(merchantID) || !payment.ValidReference(reference) {
		return "", payment.ErrNotFound
	}
	var id string
	err := s.db.Reader().QueryRowContext(ctx, `SELECT id FROM transactions WHERE merchant_id = $1 AND reference = $2`,
		merchantID, reference).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", payment.ErrNotFound
	}
	return id, err
}

// insertNew writes t with the first step of its timeline, its two
// lifecycle jobs and its count in the daily totals, inside tx. It returns
// false when the merchant has a transaction with t's reference; nothing of
// t is then kept once the caller's error rolls tx back (on PostgreSQL the
// jobs were already inserted).
//
// ON CONFLICT DO NOTHING keeps the loser of a race from aborting the
// transaction on PostgreSQL, so it can read the winner's id. The totals go
// last: their row is shared by every payment of the merchant's day, and is
// locked from there to the commit.
func (s *Transactions) insertNew(ctx context.Context, tx *sql.Tx, t *payment.Transaction) (bool, error) {
	created := payment.TransactionEvent{Kind: payment.EventCreated, At: t.CreatedAt, Status: t.Status}
	firstPoll := t.CreatedAt.Add(payment.FirstPollDelay)
	row := []any{t.ID, t.MerchantID, t.Reference, t.InternalRef, t.Amount, t.Currency, string(t.Operator),
		t.PhoneNumber, t.Description, string(t.Status), s.db.Time(t.CreatedAt), s.db.Time(t.UpdatedAt), s.db.Time(t.ExpiresAt),
		t.PushInFlight}
	if s.db.Dialect == Postgres {
		// The jobs first, then the rest in one statement: four round trips
		// (BEGIN, jobs, insert, COMMIT) where one statement each made six.
		// When the reference is taken, the caller's error rolls the jobs
		// back.
		if err := jobs.ScheduleLifecycle(ctx, s.jobs, tx, t.MerchantID, t.ID, firstPoll, t.ExpiresAt); err != nil {
			return false, err
		}
		res, err := tx.ExecContext(ctx, createPG, append(row,
			uuid.Must(uuid.NewV7()).String(), string(created.Kind), created.Source, payment.EventDetail(created.Detail),
			totalsDay(t.CreatedAt), s.db.totalsShard())...)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n == 1, err
	}
	res, err := tx.ExecContext(ctx, insertRow, row...)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); n != 1 || err != nil {
		return false, err
	}
	if err := s.addSteps(ctx, tx, t.MerchantID, t.ID, created); err != nil {
		return false, err
	}
	if err := jobs.ScheduleLifecycle(ctx, s.jobs, tx, t.MerchantID, t.ID, firstPoll, t.ExpiresAt); err != nil {
		return false, err
	}
	return true, s.db.addToTotals(ctx, tx, t, totalsMove{t.Status, 1})
}

// insertRow inserts a new transaction ($1–$14, insertColumns) unless the
// merchant has one with its reference.
const insertRow = `INSERT INTO transactions (` + insertColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
	ON CONFLICT (merchant_id, reference) DO NOTHING`

// createPG is insertNew's statement on PostgreSQL: the transaction, the
// first step of its timeline ($15–$18) and its count in the day's totals
// ($19 the day, $20 the shard), each written only if the transaction was.
// It affects one row when it inserted, none when the reference was taken.
const createPG = `WITH ins AS (` + insertRow + `
		RETURNING merchant_id, id, amount, operator, status, created_at),
	step AS (
		INSERT INTO transaction_events (` + eventColumns + `)
		SELECT $15, merchant_id, id, $16, $17, status, $18, created_at FROM ins)
	INSERT INTO transaction_daily_totals (` + totalsColumns + `)
	SELECT merchant_id, $19, status, operator, $20, 1, amount FROM ins
	` + totalsUpsert

// DeleteTransaction implements payment.Store. Only a row whose push is
// still in flight goes: once the push was taken, or a duplicate or the
// poller judged the push taken, the payment may have happened and is kept.
// Its pending jobs find no row and end without effect.
// Its timeline goes with it.
func (s *Transactions) DeleteTransaction(ctx context.Context, merchantID, id string) (bool, error) {
	if !validIDs(merchantID, id) {
		return false, nil
	}
	var deleted bool
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM transaction_events WHERE merchant_id = $1 AND transaction_id = $2
			AND transaction_id IN (SELECT id FROM transactions WHERE merchant_id = $1 AND id = $2 AND status = 'PENDING' AND push_in_flight)`,
			merchantID, id); err != nil {
			return err
		}
		t, err := scanTransaction(tx.QueryRowContext(ctx, `DELETE FROM transactions
			WHERE merchant_id = $1 AND id = $2 AND status = 'PENDING' AND push_in_flight
			RETURNING `+transactionColumns, merchantID, id))
		if errors.Is(err, payment.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		deleted = true
		return s.db.addToTotals(ctx, tx, t, totalsMove{t.Status, -1})
	})
	return deleted, err
}

// Transaction implements payment.Store.
func (s *Transactions) Transaction(ctx context.Context, merchantID, id string) (*payment.Transaction, error) {
	if !validIDs(merchantID, id) {
		return nil, payment.ErrNotFound
	}
	return scanTransaction(s.db.Reader().QueryRowContext(ctx, `SELECT `+transactionColumns+`
		FROM transactions WHERE merchant_id = $1 AND id = $2`, merchantID, id))
}

// validIDs reports whether every one of ids can name a row: the ids of
// merchants and transactions are UUIDs (payment.ValidID), and PostgreSQL,
// which types those columns, answers any other text with an error rather
// than with no row. Callers answer as for an id of no row.
func validIDs(ids ...string) bool {
	for _, id := range ids {
		if !payment.ValidID(id) {
			return false
		}
	}
	return true
}

// TransactionByInternalRef implements payment.Store.
func (s *Transactions) TransactionByInternalRef(ctx context.Context, ref string) (*payment.Transaction, error) {
	if !payment.ValidInternalRef(ref) {
		return nil, payment.ErrNotFound
	}
	return scanTransaction(s.db.QueryRowContext(ctx, `SELECT `+transactionColumns+`
		FROM transactions WHERE internal_ref = $1`, ref))
}

// Settle implements payment.Store. On SQLite the settlement joins those
// waiting for the writer (s.settlements), as a create does.
func (s *Transactions) Settle(ctx context.Context, st payment.Settlement) (*payment.Transaction, bool, error) {
	if !validIDs(st.MerchantID, st.TransactionID) {
		return nil, false, payment.ErrNotFound
	}
	var r settled
	var err error
	if s.settlements != nil {
		r, err = write(ctx, s.settlements, st)
	} else {
		err = s.db.InTx(ctx, func(tx *sql.Tx) error {
			r, err = s.settle(ctx, tx, st)
			return err
		})
	}
	if err != nil {
		return nil, false, err
	}
	if r.queued && s.AfterQueued != nil {
		s.AfterQueued()
	}
	return r.t, r.changed, nil
}

// settled is Settle's answer: the transaction, whether this settlement
// changed its state, and whether OnSettled queued deliveries with it.
type settled struct {
	t       *payment.Transaction
	changed bool
	queued  bool
}

// unknownSettled reports a settlement of a transaction that does not
// exist, which wrote nothing.
func unknownSettled(err error) bool { return errors.Is(err, payment.ErrNotFound) }

// settle applies st inside tx.
func (s *Transactions) settle(ctx context.Context, tx *sql.Tx, st payment.Settlement) (settled, error) {
	// EXPIRED is the operator's word that the request expired, and it
	// is believed only from expires_at on (contract §3): an earlier
	// report is held here, for every source, and the expiry check asks
	// the operator again at expires_at. A settled payment was certainly
	// taken, so its push is no longer in flight.
	// The operator's reference, code and our failure reason are kept
	// with the transition (NULL when the operator gave none).
	t, err := scanTransaction(tx.QueryRowContext(ctx, `UPDATE transactions
		SET status = $1, updated_at = $2, push_in_flight = FALSE,
		    operator_ref = COALESCE($5, operator_ref), operator_code = $6, failure_reason = $7
		WHERE merchant_id = $3 AND id = $4 AND status = 'PENDING'
		  AND ($1 <> 'EXPIRED' OR expires_at <= $2)
		RETURNING `+transactionColumns, string(st.To), s.db.Time(st.At), st.MerchantID, st.TransactionID,
		nullIfEmpty(st.OperatorRef), nullIfEmpty(st.OperatorCode), nullIfEmpty(st.FailureReason)))
	heard := payment.TransactionEvent{Kind: payment.EventHeard, At: st.At, Source: st.Source, Status: st.To, Detail: st.Detail}
	if err == nil {
		if err := s.addSteps(ctx, tx, t.MerchantID, t.ID, heard, payment.TransactionEvent{
			Kind: payment.EventSettled, At: st.At, Source: st.Source, Status: t.Status,
		}); err != nil {
			return settled{}, err
		}
		if t.Status == payment.StatusTimeout {
			// TIMEOUT is our decision: the operator is asked again later,
			// and the job commits with the TIMEOUT (payment.LateCheck).
			if err := jobs.ScheduleLateCheck(ctx, s.jobs, tx, t.MerchantID, t.ID, t.ExpiresAt.Add(payment.LateCheckAfter[0])); err != nil {
				return settled{}, err
			}
		}
		var queued bool
		if s.OnSettled != nil {
			if queued, err = s.OnSettled(ctx, tx, t); err != nil {
				return settled{}, err
			}
		}
		// The totals last: their rows are shared by every payment of
		// the merchant's day, and are locked from here to the commit.
		return settled{t, true, queued}, s.db.addToTotals(ctx, tx, t, totalsMove{payment.StatusPending, -1}, totalsMove{t.Status, 1})
	}
	if !errors.Is(err, payment.ErrNotFound) {
		return settled{}, err
	}
	// Already final (or unknown): never change it, but keep a different
	// late outcome for a person to reconcile. On PostgreSQL the row is
	// locked, so that late outcomes of one payment heard at once see each
	// other's case below (SQLite runs one writer at a time).
	lock := ""
	if s.db.Dialect == Postgres {
		lock = " FOR UPDATE"
	}
	t, err = scanTransaction(tx.QueryRowContext(ctx, `SELECT `+transactionColumns+`
		FROM transactions WHERE merchant_id = $1 AND id = $2`+lock, st.MerchantID, st.TransactionID))
	if err != nil {
		return settled{}, err // ErrNotFound: nothing was written
	}
	if err := s.addEvent(ctx, tx, t.MerchantID, t.ID, heard); err != nil {
		return settled{}, err
	}
	if !t.Status.Final() {
		return settled{t: t}, nil // an early EXPIRED, held
	}
	if t.OperatorRef == "" && st.OperatorRef != "" && st.To == payment.StatusSuccess {
		// A late SUCCESS may bring the operator's id of a payment that
		// ended without one: its refund needs it. Only a SUCCESS: the id
		// a contradicting FAILED report names is no payment to refund,
		// and was, when a late SUCCESS followed (its refund went to it).
		if _, err := tx.ExecContext(ctx, `UPDATE transactions SET operator_ref = $1
			WHERE merchant_id = $2 AND id = $3 AND operator_ref IS NULL`, st.OperatorRef, t.MerchantID, t.ID); err != nil {
			return settled{}, err
		}
		t.OperatorRef = st.OperatorRef
	}
	if t.Status == st.To || !st.Reconcile {
		return settled{t: t}, nil
	}
	// The same late outcome heard again (Airtel's callback and the late
	// check, say) is one case: the timeline keeps each report.
	var known int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM reconciliation_cases
		WHERE merchant_id = $1 AND transaction_id = $2 AND reported_status = $3`, t.MerchantID, t.ID, string(st.To)).Scan(&known); err != nil {
		return settled{}, err
	}
	if known == 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO reconciliation_cases
			(id, merchant_id, transaction_id, final_status, reported_status, source, detail, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			uuid.NewString(), t.MerchantID, t.ID, string(t.Status), string(st.To), st.Source, st.Detail, s.db.Time(st.At)); err != nil {
			return settled{}, err
		}
		if t.Status == payment.StatusTimeout && st.To == payment.StatusSuccess {
			// The payer paid after being counted out: the refund the
			// merchant's policy may ask for commits with the case.
			if err := jobs.ScheduleAutoRefund(ctx, s.jobs, tx, t.MerchantID, t.ID); err != nil {
				return settled{}, err
			}
		}
	}
	return settled{t: t}, s.addEvent(ctx, tx, t.MerchantID, t.ID, payment.TransactionEvent{
		Kind: payment.EventLateOutcome, At: st.At, Source: st.Source, Status: st.To, Detail: st.Detail,
	})
}

// MerchantOf returns the merchant owning a transaction. It is for operator
// tools that start from a bare transaction id (the sandbox payer).
func (s *Transactions) MerchantOf(ctx context.Context, id string) (string, error) {
	if !payment.ValidID(id) {
		return "", payment.ErrNotFound
	}
	var m string
	err := s.db.QueryRowContext(ctx, `SELECT merchant_id FROM transactions WHERE id = $1`, id).Scan(&m)
	if errors.Is(err, sql.ErrNoRows) {
		return "", payment.ErrNotFound
	}
	return m, err
}

// Overdue lists up to limit of every merchant's PENDING transactions whose
// expires_at is before cutoff, oldest first: the jobs.Sweeper's backstop for
// expiry checks a killed process was holding (partial index of migration
// 00005).
func (s *Transactions) Overdue(ctx context.Context, cutoff time.Time, limit int) ([]jobs.Ref, error) {
	return jobs.CollectRefs(s.db.QueryContext(ctx, `SELECT merchant_id, id FROM transactions
		WHERE status = 'PENDING' AND expires_at < $1 ORDER BY expires_at LIMIT $2`, s.db.Time(cutoff), limit))
}

// nullIfEmpty stores "" as NULL: "the operator said nothing".
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// listFilter is the WHERE conditions and arguments of a merchant's listed
// transactions under f, shared by the API's list and the dashboard's
// browse and export. A transaction whose push is in flight is never listed.
func (s *Transactions) listFilter(merchantID string, f payment.ListFilter) (where []string, args []any) {
	return s.listFilterAfter([]any{merchantID}, f)
}

// listFilterAfter is listFilter for a statement that already has args,
// the first of which ($1) is the merchant's id: the placeholders of f's
// values follow them.
func (s *Transactions) listFilterAfter(args []any, f payment.ListFilter) (where []string, _ []any) {
	where = []string{"merchant_id = $1", "NOT push_in_flight"}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Status != "" {
		add("status = $%d", string(f.Status))
	}
	if f.Operator != "" {
		add("operator = $%d", string(f.Operator))
	}
	if !f.From.IsZero() {
		add("created_at >= $%d", s.db.Time(f.From))
	}
	if !f.To.IsZero() {
		add("created_at <= $%d", s.db.Time(f.To))
	}
	return where, args
}
