package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"time"

	"github.com/momopay/momopay/internal/team"
)

// Sessions stores dashboard sessions, so that ending one (logout, a
// password change, a removed user) takes effect on every instance at once.
type Sessions struct{ db *DB }

// NewSessions returns the session store.
func NewSessions(db *DB) *Sessions { return &Sessions{db: db} }

// Start records a new session of a user whose password was checked as
// credential (team.User.Credential): only while the user still exists with
// that password, else team.ErrNotFound. A sign-in that checked the old
// password while the password was being changed, or the user removed, must
// not leave a session that outlives the change. On PostgreSQL the user's
// row is read FOR SHARE: a change in progress is waited for and then seen,
// and a change that comes after waits for this session, which it then
// ends. SQLite has one writer.
func (s *Sessions) Start(ctx context.Context, sess team.Session, credential string) error {
	lock := ""
	if s.db.Dialect == Postgres {
		lock = " FOR SHARE"
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO sessions (jti, user_id, merchant_id, created_at, last_seen_at, expires_at)
		SELECT $1, id, merchant_id, $4, $5, $6 FROM users WHERE id = $2 AND merchant_id = $3 AND password_hash = $7`+lock,
		sess.JTI, sess.UserID, sess.MerchantID,
		s.db.Time(sess.CreatedAt), s.db.Time(sess.LastSeenAt), s.db.Time(sess.ExpiresAt), credential)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return team.ErrNotFound
	}
	return nil
}

// Active returns the live session named jti and its user as they are now
// (role and language read afresh), or team.ErrNotFound when the session is
// unknown, revoked, past its absolute end, idle since before idleSince, or
// its user is gone.
func (s *Sessions) Active(ctx context.Context, jti string, now, idleSince time.Time) (*team.Session, *team.User, error) {
	var sess team.Session
	var created, seen, expires Timestamp
	// From the readers: on SQLite the writer connection is queued for by
	// every write, and each page's session check must not wait there (a
	// write lock held elsewhere would hold up every page). Commits, a
	// sign-out's included, are seen by the next read.
	u, err := scanUser(s.db.Reader().QueryRowContext(ctx, `SELECT u.id, u.merchant_id, u.email, u.role, u.language, u.created_at,
			s.jti, s.created_at, s.last_seen_at, s.expires_at, m.name
		FROM sessions s JOIN users u ON u.id = s.user_id AND u.merchant_id = s.merchant_id
		JOIN merchants m ON m.id = s.merchant_id
		WHERE s.jti = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND s.last_seen_at > $3`,
		jti, s.db.Time(now), s.db.Time(idleSince)), &sess.JTI, &created, &seen, &expires, &sess.MerchantName)
	if err != nil {
		return nil, nil, err
	}
	sess.UserID, sess.MerchantID = u.ID, u.MerchantID
	sess.CreatedAt, sess.LastSeenAt, sess.ExpiresAt = created.Time, seen.Time, expires.Time
	return &sess, u, nil
}

// Touch records that the session was used at now (the sliding idle
// timeout counts from here).
func (s *Sessions) Touch(ctx context.Context, jti string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE sessions SET last_seen_at = $1 WHERE jti = $2 AND revoked_at IS NULL`, s.db.Time(now), jti)
	return err
}

// End revokes one session.
func (s *Sessions) End(ctx context.Context, jti string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE sessions SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL`, s.db.Time(now), jti)
	return err
}

// EndAll revokes every session of a user.
func (s *Sessions) EndAll(ctx context.Context, userID string, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sql.Tx) error { return revokeUserSessions(ctx, s.db, tx, userID, now) })
}

func revokeUserSessions(ctx context.Context, db *DB, tx *sql.Tx, userID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE sessions SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL`, db.Time(now), userID)
	return err
}

// Prune deletes sessions that ended before cutoff, keeping the table small.
func (s *Sessions) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at < $1 OR revoked_at < $1`, s.db.Time(cutoff))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sessionSecretSetting names the settings row of the sandbox's secret.
const sessionSecretSetting = "session_secret"

// SessionSecret returns the session signing secret kept in the database,
// drawing and storing 32 random bytes the first time. Instances racing to
// draw one all end up with the first one stored.
func (s *Sessions) SessionSecret(ctx context.Context) ([]byte, error) {
	drawn := make([]byte, 32)
	rand.Read(drawn)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`,
		sessionSecretSetting, base64.StdEncoding.EncodeToString(drawn)); err != nil {
		return nil, err
	}
	var stored string
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = $1`, sessionSecretSetting).Scan(&stored); err != nil {
		return nil, err
	}
	secret, err := base64.StdEncoding.DecodeString(stored)
	if err == nil && len(secret) < 32 {
		err = errors.New("too short")
	}
	if err != nil {
		return nil, errors.New("the stored session secret is damaged: delete the settings row named session_secret and restart")
	}
	return secret, nil
}
