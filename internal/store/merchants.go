package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// Merchant is a business that collects payments through momopay.
type Merchant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
}

// ErrEmailTaken is returned when a merchant with that email exists.
var ErrEmailTaken = errors.New("a merchant with this email already exists")

// Merchants stores merchants and their dashboard passwords.
type Merchants struct{ db *DB }

// NewMerchants returns the merchant store.
func NewMerchants(db *DB) *Merchants { return &Merchants{db: db} }

// Create adds a merchant and its first owner, by the rules of
// team.ValidateMerchant; the password is kept only as a bcrypt hash.
func (s *Merchants) Create(ctx context.Context, name, email, password string, now time.Time) (*Merchant, error) {
	name, email = strings.TrimSpace(name), team.NormalizeEmail(email)
	if err := team.ValidateMerchant(name, email, password); err != nil {
		return nil, err
	}
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return nil, err
	}
	m := &Merchant{ID: uuid.NewString(), Name: name, Email: email, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	// The merchant's login is its first user, an owner, made in the same
	// transaction: the email is unique among merchants and users alike.
	owner := &team.User{ID: uuid.NewString(), MerchantID: m.ID, Email: m.Email, Role: team.Owner, CreatedAt: m.CreatedAt}
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO merchants (id, name, email, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
			m.ID, m.Name, m.Email, string(hash), s.db.Time(m.CreatedAt))
		if err != nil {
			return err
		}
		return insertUser(ctx, s.db, tx, owner, string(hash))
	})
	if IsUniqueViolation(err, "email") || errors.Is(err, team.ErrEmailTaken) {
		return nil, ErrEmailTaken
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// List returns every merchant, oldest first.
func (s *Merchants) List(ctx context.Context) ([]Merchant, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, email, created_at FROM merchants ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Merchant{}
	for rows.Next() {
		var m Merchant
		var created Timestamp
		if err := rows.Scan(&m.ID, &m.Name, &m.Email, &created); err != nil {
			return nil, err
		}
		m.CreatedAt = created.Time
		out = append(out, m)
	}
	return out, rows.Err()
}

// Exists reports whether a merchant with id exists.
func (s *Merchants) Exists(ctx context.Context, id string) (bool, error) {
	if !payment.ValidID(id) {
		return false, nil
	}
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM merchants WHERE id = $1`, id).Scan(&n)
	return n > 0, err
}

// Count returns the number of merchants; serve seeds a demo merchant when 0.
func (s *Merchants) Count(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM merchants`).Scan(&n)
	return n, err
}
