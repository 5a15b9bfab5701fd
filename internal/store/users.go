package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/bcrypt"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// PasswordCost is the bcrypt cost of new password hashes. Tests that sign
// in many times under the race detector lower it; nothing else should.
var PasswordCost = bcrypt.DefaultCost

// Users stores the people who sign in to merchants' dashboards.
type Users struct{ db *DB }

// NewUsers returns the user store.
func NewUsers(db *DB) *Users { return &Users{db: db} }

const userColumns = `id, merchant_id, email, role, language, created_at`

func scanUser(row interface{ Scan(...any) error }, extra ...any) (*team.User, error) {
	var u team.User
	var created Timestamp
	err := row.Scan(append([]any{&u.ID, &u.MerchantID, &u.Email, &u.Role, &u.Language, &created}, extra...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, team.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	u.CreatedAt = created.Time
	return &u, nil
}

// Add creates a user of a merchant. The rules are team.ValidateNew's; the
// password is kept only as a bcrypt hash. A user past team.MaxUsers is
// refused with team.ErrTooManyUsers.
func (s *Users) Add(ctx context.Context, merchantID, email string, role team.Role, password string, now time.Time) (*team.User, error) {
	email = team.NormalizeEmail(email)
	// The merchant's name is one of the words a password must not be
	// made of; an unknown merchant is refused by the insert.
	var merchantName string
	if err := s.db.QueryRowContext(ctx, `SELECT name FROM merchants WHERE id = $1`, merchantID).Scan(&merchantName); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if err := team.ValidateNew(email, role, password, merchantName); err != nil {
		return nil, err
	}
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return nil, err
	}
	u := &team.User{ID: uuid.NewString(), MerchantID: merchantID, Email: email, Role: role, CreatedAt: now.UTC().Truncate(time.Microsecond)}
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		// Two additions at once must not both see room for one.
		if err := lockMerchant(ctx, s.db, tx, merchantID); err != nil {
			return err
		}
		if err := insertUser(ctx, s.db, tx, u, string(hash)); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE merchant_id = $1`, merchantID).Scan(&n); err != nil {
			return err
		}
		if n > team.MaxUsers {
			return team.ErrTooManyUsers
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

func insertUser(ctx context.Context, db *DB, tx *sql.Tx, u *team.User, hash string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO users (id, merchant_id, email, password_hash, role, language, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, u.ID, u.MerchantID, u.Email, hash, string(u.Role), u.Language, db.Time(u.CreatedAt))
	if IsUniqueViolation(err, "email") {
		return team.ErrEmailTaken
	}
	return err
}

// List returns a merchant's users, oldest first.
func (s *Users) List(ctx context.Context, merchantID string) ([]team.User, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT `+userColumns+` FROM users WHERE merchant_id = $1 ORDER BY created_at, id`, merchantID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []team.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *u)
	}
	return out, rows.Err()
}

// User returns one user of a merchant, or team.ErrNotFound.
func (s *Users) User(ctx context.Context, merchantID, id string) (*team.User, error) {
	if !payment.ValidID(id) {
		return nil, team.ErrNotFound
	}
	return scanUser(s.db.Reader().QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE merchant_id = $1 AND id = $2`, merchantID, id))
}

// ByEmail returns the user with that email in any merchant (a sign-in
// names no merchant), or team.ErrNotFound.
func (s *Users) ByEmail(ctx context.Context, email string) (*team.User, error) {
	email = team.NormalizeEmail(email)
	if team.CheckEmail(email) != "" { // no user has it; PostgreSQL would refuse a NUL
		return nil, team.ErrNotFound
	}
	return scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE email = $1`, email))
}

// dummyHash is compared against when the email is unknown, so that an
// unknown email and a wrong password take the same time. It is made at
// the first use, with PasswordCost as the users' hashes are (tests lower
// it before any sign-in).
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("momopay-no-such-user"), PasswordCost)
	return h
})

// CheckPassword returns the user whose email and password match, or nil
// (and no error) when either is wrong; both cases cost one bcrypt
// comparison, so timing does not tell which. knownDevice says the check is
// a sign-in from a browser that signed in to this account before (its
// device cookie): it waits for a hashing slot ahead of others (hashGate).
func (s *Users) CheckPassword(ctx context.Context, email, password string, knownDevice bool) (*team.User, error) {
	var hash string
	var u *team.User
	var err error = team.ErrNotFound
	if email = team.NormalizeEmail(email); team.CheckEmail(email) == "" { // as ByEmail
		u, err = scanUser(s.db.QueryRowContext(ctx, `SELECT `+userColumns+`, password_hash FROM users WHERE email = $1`, email), &hash)
	}
	if errors.Is(err, team.ErrNotFound) {
		_, err := passwordMatches(ctx, knownDevice, dummyHash(), password)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	// bcrypt reads 72 bytes and ignores the rest, so a longer password
	// would match the one made of its first 72; none is set that long.
	ok, err := passwordMatches(ctx, knownDevice, []byte(hash), password)
	if err != nil {
		return nil, err
	}
	if !ok || len(password) > team.MaxPassword {
		return nil, nil
	}
	u.Credential = hash
	return u, nil
}

// SetPassword replaces a user's password and ends every session of theirs
// in the same transaction, and returns the new credential (team.User). With
// current set (the Credential of the check of the current password), it
// applies only while that is still the user's password: otherwise
// team.ErrPasswordChanged. An operator's reset passes "".
func (s *Users) SetPassword(ctx context.Context, merchantID, id, current, password string, now time.Time) (string, error) {
	if !payment.ValidID(id) {
		return "", team.ErrNotFound
	}
	// The user's email and the merchant's name are words their password
	// must not be made of.
	var email, merchantName string
	if err := s.db.QueryRowContext(ctx, `SELECT u.email, m.name FROM users u JOIN merchants m ON m.id = u.merchant_id
		WHERE u.merchant_id = $1 AND u.id = $2`, merchantID, id).Scan(&email, &merchantName); errors.Is(err, sql.ErrNoRows) {
		return "", team.ErrNotFound
	} else if err != nil {
		return "", err
	}
	if msg := team.CheckPassword(password, email, merchantName); msg != "" {
		return "", &payment.Error{Code: payment.EINVALID, Message: msg, Fields: map[string]string{"password": msg}}
	}
	hash, err := hashPassword(ctx, password)
	if err != nil {
		return "", err
	}
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = $1 WHERE merchant_id = $2 AND id = $3 AND ($4 = '' OR password_hash = $4)`,
			string(hash), merchantID, id, current)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if current != "" {
				if _, err := scanUser(tx.QueryRowContext(ctx, `SELECT `+userColumns+` FROM users WHERE merchant_id = $1 AND id = $2`, merchantID, id)); err == nil {
					return team.ErrPasswordChanged
				}
			}
			return team.ErrNotFound
		}
		// PostgreSQL: the UPDATE above holds the user's row, so a session
		// being started (Sessions.Start) either committed before it and is
		// ended here, or waits and then finds the credential changed.
		return revokeUserSessions(ctx, s.db, tx, id, now)
	})
	if err != nil {
		return "", err
	}
	return string(hash), nil
}

// SetRole changes a user's role and returns the role they had; the
// merchant keeps at least one owner. A role set to the one the user has is
// no change (was == role), decided under the merchant's lock so that of two
// identical changes sent at once exactly one changes anything (and is
// audited).
func (s *Users) SetRole(ctx context.Context, merchantID, id string, role team.Role) (was team.Role, err error) {
	if !role.Valid() {
		return "", &payment.Error{Code: payment.EINVALID, Message: "role must be owner, developer or viewer", Fields: map[string]string{"role": "role must be owner, developer or viewer"}}
	}
	if !payment.ValidID(id) {
		return "", team.ErrNotFound
	}
	err = s.db.InTx(ctx, func(tx *sql.Tx) error {
		if err := lockMerchant(ctx, s.db, tx, merchantID); err != nil {
			return err
		}
		var current string
		err := tx.QueryRowContext(ctx, `SELECT role FROM users WHERE merchant_id = $1 AND id = $2`, merchantID, id).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return team.ErrNotFound
		}
		if err != nil {
			return err
		}
		if was = team.Role(current); was == role {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE users SET role = $1 WHERE merchant_id = $2 AND id = $3`, string(role), merchantID, id); err != nil {
			return err
		}
		return keepAnOwner(ctx, tx, merchantID)
	})
	if err != nil {
		return "", err
	}
	return was, nil
}

// SetLanguage records a user's language ("" for the browser's).
func (s *Users) SetLanguage(ctx context.Context, merchantID, id, lang string) error {
	if msg := team.CheckLanguage(lang); msg != "" {
		return &payment.Error{Code: payment.EINVALID, Message: msg, Fields: map[string]string{"language": msg}}
	}
	if !payment.ValidID(id) {
		return team.ErrNotFound
	}
	res, err := s.db.ExecContext(ctx, `UPDATE users SET language = $1 WHERE merchant_id = $2 AND id = $3`, lang, merchantID, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return team.ErrNotFound
	}
	return nil
}

// Remove deletes a user and, with them, their sessions; the merchant keeps
// at least one owner.
func (s *Users) Remove(ctx context.Context, merchantID, id string) error {
	if !payment.ValidID(id) {
		return team.ErrNotFound
	}
	return s.db.InTx(ctx, func(tx *sql.Tx) error {
		if err := lockMerchant(ctx, s.db, tx, merchantID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = $1 AND merchant_id = $2`, id, merchantID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM users WHERE merchant_id = $1 AND id = $2`, merchantID, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return team.ErrNotFound
		}
		return keepAnOwner(ctx, tx, merchantID)
	})
}

// keepAnOwner fails the transaction it runs in when the merchant would be
// left without an owner. Writers of users serialise on the merchant's row
// (lockMerchant on PostgreSQL; SQLite has one writer), so two owners cannot
// demote each other at once.
func keepAnOwner(ctx context.Context, tx *sql.Tx, merchantID string) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE merchant_id = $1 AND role = 'owner'`, merchantID).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return team.ErrLastOwner
	}
	return nil
}

// lockMerchant serialises, on PostgreSQL, the transactions that change a
// merchant's team: its owners, and its size (SQLite's single writer
// already does). FOR NO KEY UPDATE, unlike FOR UPDATE, does not hold up
// the inserts that only reference the merchant (payments, sessions):
// their foreign key checks take FOR KEY SHARE.
func lockMerchant(ctx context.Context, db *DB, tx *sql.Tx, merchantID string) error {
	if db.Dialect != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, `SELECT id FROM merchants WHERE id = $1 FOR NO KEY UPDATE`, merchantID)
	return err
}
