// Package webhook signs, records and delivers the outbound events of section 6
// of the contract; it must not decide payment state.
//
// The pieces here are deliberately pure: signing (sign.go) and a hardened HTTP
// client plus URL checks (transport.go). Which event to send, and when, is
// decided by the payment domain; this package only makes each attempt safe and
// verifiable for the receiver.
package webhook
