package team

import (
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/momopay/momopay/internal/payment"
)

// User is a person who signs in to one merchant's dashboard.
type User struct {
	ID         string    `json:"id"`
	MerchantID string    `json:"merchant_id"`
	Email      string    `json:"email"`
	Role       Role      `json:"role"`
	Language   string    `json:"language"` // "en", "fr", or "" for the browser's choice
	CreatedAt  time.Time `json:"created_at"`
	// Credential is the password hash the user was just checked against
	// (CheckPassword) or given (SetPassword), never shown. A session
	// starts, and a password change applies, only while it is still the
	// user's: a sign-in racing a password change or the user's removal
	// cannot outlive it, and of two changes at once the second is refused.
	Credential string `json:"-"`
}

// Role is what a user may do, as a named set of permissions.
type Role string

// The three roles of a merchant's team.
const (
	Owner     Role = "owner"     // everything, the team included
	Developer Role = "developer" // keys, webhooks, transactions, sandbox phone
	Viewer    Role = "viewer"    // read only
)

// Roles lists every role, most powerful first.
var Roles = []Role{Owner, Developer, Viewer}

// Permission names one kind of action in the dashboard.
type Permission string

// The permissions a role grants. Reading transactions, keys' list,
// webhooks and the overview needs Read; each change needs its own.
const (
	Read          Permission = "read"
	ManageKeys    Permission = "keys:write"
	ManageHooks   Permission = "webhooks:write"
	ManagePayment Permission = "transactions:write" // sandbox phone, reconciliation
	ManageTeam    Permission = "team:write"
	ReadAudit     Permission = "audit:read"
)

var grants = map[Role][]Permission{
	Owner:     {Read, ManageKeys, ManageHooks, ManagePayment, ManageTeam, ReadAudit},
	Developer: {Read, ManageKeys, ManageHooks, ManagePayment},
	Viewer:    {Read},
}

// Permissions returns what the role grants, in a fixed order; nil for an
// unknown role.
func (r Role) Permissions() []Permission { return slices.Clone(grants[r]) }

// Can reports whether the role grants p.
func (r Role) Can(p Permission) bool { return slices.Contains(grants[r], p) }

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { _, ok := grants[r]; return ok }

// Languages the dashboard speaks; the first is the default.
var Languages = []string{"en", "fr"}

// NormalizeEmail trims and lower-cases an email address.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// ValidateNew checks the fields of a user to be added (email already
// normalised) to the merchant named merchantName, returning an EINVALID
// *payment.Error naming each bad field. The password must not be made of
// the email or the merchant's name (CheckPassword).
func ValidateNew(email string, role Role, password, merchantName string) error {
	fields := map[string]string{}
	if msg := CheckEmail(email); msg != "" {
		fields["email"] = msg
	}
	if !role.Valid() {
		fields["role"] = "role must be owner, developer or viewer"
	}
	if msg := CheckPassword(password, email, merchantName); msg != "" {
		fields["password"] = msg
	}
	return invalid(fields)
}

// ValidateMerchant checks a new merchant's name (already trimmed) and its
// first owner's email (normalised) and password, by the rules a user of
// the team meets (CheckEmail, CheckPassword), returning an EINVALID
// *payment.Error naming each bad field. The owner signs in like any user,
// so an account made from the command line must not slip past them.
func ValidateMerchant(name, email, password string) error {
	fields := map[string]string{}
	if n := utf8.RuneCountInString(name); n == 0 || n > MaxMerchantName {
		fields["name"] = "name must be 1 to 200 characters"
	} else if !payment.IsText(name) {
		fields["name"] = "name must be text, without control characters"
	}
	if msg := CheckEmail(email); msg != "" {
		fields["email"] = msg
	}
	if msg := CheckPassword(password, email, name); msg != "" {
		fields["password"] = msg
	}
	return invalid(fields)
}

// MaxMerchantName bounds a merchant's name, in characters.
const MaxMerchantName = 200

// CheckEmail returns what is wrong with a normalised email, or "".
// Normalising turns each byte of invalid UTF-8 into U+FFFD, so an address
// holding one was not valid text as given (and two different byte strings
// would sign in to one account): it is refused.
func CheckEmail(email string) string {
	if len(email) > 254 {
		return "email must be at most 254 characters"
	}
	if strings.ContainsRune(email, utf8.RuneError) || hasControl(email) {
		return "email must be an address such as name@example.com"
	}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
		return "email must be an address such as name@example.com"
	}
	return ""
}

// hasControl reports whether s holds a control character (C0, DEL or C1),
// which no one types into an email or a password field.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

// CheckLanguage returns what is wrong with a language preference, or "".
func CheckLanguage(lang string) string {
	if lang != "" && !slices.Contains(Languages, lang) {
		return "language must be en or fr"
	}
	return ""
}

func invalid(fields map[string]string) error {
	if len(fields) == 0 {
		return nil
	}
	msg := "invalid user"
	for _, k := range []string{"name", "email", "role", "password", "language"} {
		if m, ok := fields[k]; ok {
			msg = m
			break
		}
	}
	return &payment.Error{Code: payment.EINVALID, Message: msg, Fields: fields}
}

// MaxUsers bounds a merchant's team, as keys and webhook endpoints are
// bounded: every user can hold sessions and device cookies (each of which
// gets a sign-in ahead of new browsers), and the team page lists them all.
const MaxUsers = 100

// Errors the store and the dashboard share.
var (
	ErrNotFound   = &payment.Error{Code: payment.ENOTFOUND, Message: "user not found"}
	ErrEmailTaken = &payment.Error{Code: payment.EDUPLICATE, Message: "a user with this email already exists",
		Fields: map[string]string{"email": "a user with this email already exists"}}
	ErrLastOwner = &payment.Error{Code: payment.EUNPROCESSABLE, Message: "a merchant keeps at least one owner",
		Fields: map[string]string{"role": "a merchant keeps at least one owner"}}
	// ErrTooManyUsers refuses a user past MaxUsers.
	ErrTooManyUsers = &payment.Error{Code: payment.EUNPROCESSABLE,
		Message: fmt.Sprintf("a merchant has at most %d users: remove one who no longer needs access first", MaxUsers)}
	// ErrPasswordChanged: the password checked as current was changed
	// meanwhile (by another session), so this change is not made.
	ErrPasswordChanged = &payment.Error{Code: payment.EUNPROCESSABLE, Message: "the current password was changed meanwhile",
		Fields: map[string]string{"current": "the current password was changed meanwhile"}}
)
