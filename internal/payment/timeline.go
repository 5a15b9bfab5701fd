package payment

import (
	"strings"
	"time"
	"unicode/utf8"
)

// EventKind names one step of a transaction's timeline.
type EventKind string

// The steps a transaction's timeline records. Each is written in the
// database transaction of the change it describes, so the timeline never
// shows a step that did not happen, nor misses one that did.
const (
	// EventCreated: the transaction was recorded, PENDING.
	EventCreated EventKind = "created"
	// EventPushAccepted: the operator took the payment request.
	EventPushAccepted EventKind = "push_accepted"
	// EventPushUnconfirmed: the push may have reached the payer (the
	// operator's answer was ambiguous, or its sender stopped), so the
	// transaction is kept and polling settles it. Detail says why.
	EventPushUnconfirmed EventKind = "push_unconfirmed"
	// EventHeard: an answer about the payment came in (an operator's
	// callback or status poll, the expiry check, the sandbox phone), with
	// the status it reported and the operator's own code in Detail.
	EventHeard EventKind = "heard"
	// EventSettled: the transaction reached its final Status.
	EventSettled EventKind = "settled"
	// EventLateOutcome: an answer contradicted the final state and was
	// recorded as a reconciliation case.
	EventLateOutcome EventKind = "late_outcome"
)

// MaxEventDetail bounds the text kept with a timeline step: an operator's
// code and message fit, a runaway error string does not bloat the table.
const MaxEventDetail = 500

// TransactionEvent is one step of a transaction's timeline. Source is who
// reported an answer (SourceCallback, SourcePoll, SourceExpiry,
// SourceSandbox) and is empty for the steps momopay takes itself; Status is
// the status reached (created, settled) or reported (heard, late outcome).
type TransactionEvent struct {
	Kind   EventKind `json:"kind"`
	At     time.Time `json:"at"`
	Source string    `json:"source,omitempty"`
	Status Status    `json:"status,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

// EventDetail makes text from an operator or an error storable as an
// event's detail: valid UTF-8 without NUL (PostgreSQL refuses both), at most
// MaxEventDetail bytes, cut on a character boundary.
func EventDetail(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= MaxEventDetail {
		return s
	}
	cut := MaxEventDetail
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
