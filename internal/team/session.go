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

// Audit actions the dashboard and the command line record (a short dotted
// name each). The dashboard shows each in words: a new one goes into
// Actions, and the dashboard's test asks for its English and French.
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

	ActionEndpointAdded    = "webhook.endpoint_added"
	ActionEndpointRotated  = "webhook.secret_rotated"
	ActionEndpointDeleted  = "webhook.endpoint_deleted"
	ActionEndpointEnabled  = "webhook.endpoint_enabled"
	ActionEndpointDisabled = "webhook.endpoint_disabled"
	ActionDeliveryResent   = "webhook.delivery_resent"
	ActionResentSince      = "webhook.undelivered_resent"

	ActionCaseResolved = "reconciliation.case_resolved"

	// Changes only the command line makes (momopay refund, momopay
	// merchant auto-refund), and the service's own auto-refunds.
	ActionRefundRequested = "transaction.refund_requested"
	ActionRefundAnswered  = "transaction.refund_answered"
	ActionAutoRefundOn    = "merchant.auto_refund_on"
	ActionAutoRefundOff   = "merchant.auto_refund_off"
)

// Actions lists every audit action above.
var Actions = []string{ActionSignIn, ActionSignInFailed, ActionSignOut, ActionKeyCreated, ActionKeyRevoked,
	ActionUserAdded, ActionUserRemoved, ActionRoleChanged, ActionPassword,
	ActionEndpointAdded, ActionEndpointRotated, ActionEndpointDeleted, ActionEndpointEnabled, ActionEndpointDisabled,
	ActionDeliveryResent, ActionResentSince, ActionCaseResolved,
	ActionRefundRequested, ActionRefundAnswered, ActionAutoRefundOn, ActionAutoRefundOff}

// AutoRefundTarget is the target of an auto-refund setting's audit entry:
// what the setting refunds.
const AutoRefundTarget = "a SUCCESS reported after TIMEOUT"

// KeyTarget names an API key in an audit entry: its visible prefix and its
// id, never the key.
func KeyTarget(prefix, id string) string { return prefix + "… (" + id + ")" }
