package team

import "time"

// Session is a signed-in browser: the row its token's jti names, and the
// times that bound it (an absolute end, and an idle timeout counted from
// LastSeenAt).
type Session struct {
	JTI        string
	UserID     string
	MerchantID string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
	// MerchantName is read with the session, for the page header.
	MerchantName string
}

// AuditEntry is one line of a merchant's audit log: who (UserID, or only
// Email for a failed sign-in), did what (Action) to what (Target), from
// which client address, when.
type AuditEntry struct {
	ID         string    `json:"id"`
	MerchantID string    `json:"merchant_id"`
	UserID     string    `json:"user_id"`
	Email      string    `json:"email"`
	Action     string    `json:"action"`
	Target     string    `json:"target"`
	Address    string    `json:"address"`
	At         time.Time `json:"at"`
}

// Audit actions the dashboard records. Other packages may add their own
// (a short dotted name, as these).
const (
	ActionSignIn       = "user.sign_in"
	ActionSignInFailed = "user.sign_in_failed"
	ActionSignOut      = "user.sign_out"
	ActionKeyCreated   = "api_key.created"
	ActionKeyRevoked   = "api_key.revoked"
	ActionUserAdded    = "user.added"
	ActionUserRemoved  = "user.removed"
	ActionRoleChanged  = "user.role_changed"
	ActionPassword     = "user.password_changed"
)
