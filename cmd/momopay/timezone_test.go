package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPollsKeepTimeInChad runs serve on SQLite with TZ set to N'Djamena's
// (UTC+1), as a merchant's laptop in Chad has it, and watches a Moov
// payment's status enquiries. River writes a snoozed job's next time to
// SQLite as time.Time.String() in the process's local zone, and compares
// it as text with a UTC "now": an hour ahead, every poll after the first
// waited an hour, and a Moov payment (settled by polls only) stayed
// PENDING until its expiry check. The process keeps its time in UTC.
func TestPollsKeepTimeInChad(t *testing.T) {
	if _, err := os.Stat("/usr/share/zoneinfo/Africa/Ndjamena"); err != nil {
		t.Skip("no time zone database here:", err)
	}
	t.Parallel()
	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "chad.db"))
	cmd.Env = append(os.Environ(), "TZ=Africa/Ndjamena")
	p := start(t, cmd)
	key := apiKeyLine.FindStringSubmatch(p.stdout.String())[1]
	tx := call(t, "POST", p.url+"/v1/transactions", key,
		`{"reference":"chad-1","amount":1500,"currency":"XAF","operator":"MOOV","phone_number":"+23560000003"}`)
	if tx["status"] != "PENDING" {
		t.Fatalf("create: %v", tx)
	}
	// Moov is asked 3 s after the push, then every 3 s.
	deadline := time.Now().Add(25 * time.Second)
	for strings.Count(p.stderr.String(), "operation=getTransactionStatus") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d status enquiries in 25 s, want 3 or more (every 3 s)", strings.Count(p.stderr.String(), "operation=getTransactionStatus"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
