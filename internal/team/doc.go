// Package team is the domain of the people who sign in to a merchant's
// dashboard: a User, its Role, what each role is permitted to do, and the
// rules an email, a password and a language must follow.
//
// It holds rules only: it imports neither net/http nor database/sql. The
// store keeps users; the dashboard asks Role.Can before every action.
package team
