package team_test

import (
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/team"
)

// TestGuessablePasswordsRefused: a new password long enough but among the
// first an attacker tries (a common one, a word with digits, a keyboard
// row, a repeat, a date run, or the user's own email or merchant name) is
// refused with PasswordGuessable; phrases and random strings pass, and
// the length and character rules still come first.
func TestGuessablePasswordsRefused(t *testing.T) {
	for _, p := range []string{
		"passwordpassword", "password1234", "Password1234!", "123456789012", "aaaaaaaaaaaa",
		"qwertyuiop12", "azertyuiop12", "iloveyou12345", "changeme1234", "1a1a1a1a1a1a1a1a",
		"19701231197012311970", strings.Repeat("password", 9),
		// Repeats of characters of more than one byte, which the
		// estimate alone takes for random.
		strings.Repeat("é", 12), strings.Repeat("日本", 6), strings.Repeat("ñ", 36), strings.Repeat("éàèù", 4),
	} {
		if got := team.CheckPassword(p); got != team.PasswordGuessable {
			t.Errorf("CheckPassword(%q) = %q, want it refused as guessable", p, got)
		}
	}
	for _, p := range []string{
		"a long password", "correct horse battery staple", "N-djamena 2026!", "pa55-word-never-logged",
		"kx7QpR2vLm9TzW4n", "Ndjaména, où la pluie tombe", "日本の夏はとても暑いです",
	} {
		if got := team.CheckPassword(p); got != "" {
			t.Errorf("CheckPassword(%q) = %q, want it accepted", p, got)
		}
	}

	// Built from what the user is known by: refused for them, not for
	// someone else.
	const own = "kadidja.mahamat1"
	if got := team.CheckPassword(own); got != "" {
		t.Fatalf("CheckPassword(%q) with nothing related = %q, want it accepted", own, got)
	}
	if got := team.CheckPassword(own, "kadidja.mahamat@boutique-sahel.td"); got != team.PasswordGuessable {
		t.Errorf("CheckPassword(%q) for kadidja.mahamat@… = %q, want it refused", own, got)
	}
	if got := team.CheckPassword("boutiquesahel123", "", "Boutique Sahel"); got != team.PasswordGuessable {
		t.Errorf("a password made of the merchant's name: %q, want it refused", got)
	}

	// The other rules are told first: the estimate is about a password
	// that could otherwise be set.
	for p, want := range map[string]string{
		"short":                    "password must be 12 to 72 bytes long",
		strings.Repeat("a", 73):    "password must be 12 to 72 bytes long",
		"password\x00password1234": "password must not contain control characters",
		"password\xffpassword1234": "password must be valid UTF-8",
	} {
		if got := team.CheckPassword(p); got != want {
			t.Errorf("CheckPassword(%.20q) = %q, want %q", p, got, want)
		}
	}

	// The user's own words reach ValidateNew and ValidateMerchant.
	if err := team.ValidateNew("kadidja.mahamat@boutique-sahel.td", team.Viewer, own, "Sahel"); err == nil || !strings.Contains(err.Error(), "too easy to guess") {
		t.Errorf("ValidateNew with a password made of the email: %v", err)
	}
	if err := team.ValidateNew("dev@example.td", team.Viewer, "Boutique Sahel 1", "Boutique Sahel"); err == nil || !strings.Contains(err.Error(), "too easy to guess") {
		t.Errorf("ValidateNew with a password made of the merchant's name: %v", err)
	}
	if err := team.ValidateNew("dev@example.td", team.Viewer, "Boutique Sahel 1", "Other"); err != nil {
		t.Errorf("ValidateNew with another merchant's name as password: %v", err)
	}
	if err := team.ValidateMerchant("Boutique Sahel", "owner@example.td", "boutiquesahel123"); err == nil || !strings.Contains(err.Error(), "too easy to guess") {
		t.Errorf("ValidateMerchant with a password made of the name: %v", err)
	}
}
