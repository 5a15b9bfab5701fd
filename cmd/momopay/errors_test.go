package main_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestDomainErrorsReadAsMessages: a refusal from the domain (a duplicate
// webhook URL, an unknown delivery) prints its message, not the internal
// code that payment.Error puts first for logs ("unprocessable: ...").
func TestDomainErrorsReadAsMessages(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := []string{"--db", dir + "/m.db"}
	if _, errOut, code := runIn(t, dir, nil, append([]string{"migrate"}, db...)...); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}
	mc := exec.Command(binary, append([]string{"merchant", "create", "--name", "Shop", "--email", "s@example.td", "--password-stdin", "--json"}, db...)...)
	mc.Stdin = strings.NewReader("a long password here\n")
	out, err := mc.Output()
	if err != nil {
		t.Fatalf("merchant create: %v", err)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(out, &m); err != nil || m.ID == "" {
		t.Fatalf("merchant create printed %q: %v", out, err)
	}
	merchant := m.ID
	create := append([]string{"webhook", "create", "--merchant", merchant, "--url", "http://127.0.0.1:9/hook"}, db...)
	if _, errOut, code := runIn(t, dir, nil, create...); code != 0 {
		t.Fatalf("webhook create: %s", errOut)
	}
	cases := []struct {
		args []string
		want string
	}{
		{create, "momopay: this webhook URL is registered already"},
		{append([]string{"webhook", "resend", "--merchant", merchant, "01a2020b-2040-79d9-99d9-9800f953fc8a"}, db...), "momopay: webhook delivery not found\n"},
	}
	// Every bad field named once, in its own words.
	add := exec.Command(binary, append([]string{"user", "add", "--merchant", merchant, "--email", "u@example.td", "--role", "god", "--password-stdin"}, db...)...)
	add.Stdin = strings.NewReader("x\n")
	if errOut, err := add.CombinedOutput(); err == nil || string(errOut) != "momopay: role must be owner, developer or viewer; password must be 12 to 72 bytes long\n" {
		t.Errorf("user add with a bad role and password: %v %q", err, errOut)
	}
	for _, c := range cases {
		_, errOut, code := runIn(t, dir, nil, c.args...)
		if code != 1 || !strings.HasPrefix(errOut, c.want) {
			t.Errorf("momopay %s: exit %d, stderr %q, want it to start with %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}
