package team

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustelem/zxcvbn"
)

// Password length bounds: bcrypt reads at most 72 bytes.
const (
	MinPassword = 12
	MaxPassword = 72
)

// PasswordGuessable is CheckPassword's refusal of a password that an
// attacker would try early. The dashboard tells it from the length and
// character refusals by this text.
const PasswordGuessable = "password is too easy to guess (a common password, a word with digits, a keyboard row, a repeat, your email or the merchant's name): a few unrelated words are better"

// minStrength is the zxcvbn score a new password must reach: 3 means an
// estimated 10^8 guesses or more. Length alone does not give that
// ("passwordpassword", "123456789012" and "azertyuiop12" are 12 bytes or
// more), and the sign-in throttle only slows guesses at the form: a copy
// of the bcrypt hashes can be tried offline, where the common passwords
// go first.
const minStrength = 3

// CheckPassword returns what is wrong with a new password, or "". related
// are what the user is known by (their email, the merchant's name): a
// password built from them is guessed early too.
//
// It is for a password being set. Signing in compares with the hash
// whatever the password, so a user whose password predates a rule still
// signs in, and meets the rule at their next change.
func CheckPassword(password string, related ...string) string {
	switch {
	case !utf8.ValidString(password):
		return "password must be valid UTF-8"
	case hasControl(password):
		return "password must not contain control characters"
	case len(password) < MinPassword || len(password) > MaxPassword:
		return "password must be 12 to 72 bytes long"
	}
	// The estimate reads repeats of bytes, not of characters: twelve
	// "é" or six "日本" score as random. A password of fewer than
	// minDistinct different characters is a repeat whatever they are.
	if distinct(password) < minDistinct {
		return PasswordGuessable
	}
	// The estimate takes at most a few milliseconds at 72 bytes (its
	// matching grows with the length, which is bounded above).
	if zxcvbn.PasswordStrength(password, relatedWords(related)).Score < minStrength {
		return PasswordGuessable
	}
	return ""
}

// minDistinct is the fewest different characters a password may have.
const minDistinct = 5

// distinct counts the different characters of s.
func distinct(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
}

// relatedWords are the words of what a user is known by, for the
// estimate's dictionary of the user's own words: each whole, its parts on
// either side of an '@', each part without its separators, and each run
// of letters and digits ("kadidja.mahamat@sahel.td" gives
// "kadidja.mahamat", "kadidjamahamat", "kadidja", "mahamat", "sahel.td",
// "saheltd", "sahel").
// The estimate counts each piece of a password as a step, so a password
// made of an email's local part with a digit must find that part whole.
func relatedWords(related []string) []string {
	notAlnum := func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }
	var words []string
	add := func(w string) {
		if utf8.RuneCountInString(w) >= 3 && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	for _, r := range related {
		r = strings.ToLower(strings.TrimSpace(r))
		add(r)
		for part := range strings.SplitSeq(r, "@") {
			add(part)
			add(strings.Join(strings.FieldsFunc(part, notAlnum), ""))
			for _, w := range strings.FieldsFunc(part, notAlnum) {
				add(w)
			}
		}
	}
	return words
}
