package payment_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDomainImportsNoHTTPOrSQL keeps the domain free of transport and
// storage: handlers and stores depend on it, never the other way round.
func TestDomainImportsNoHTTPOrSQL(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		switch strings.TrimSpace(dep) {
		case "net/http", "database/sql":
			t.Errorf("internal/payment depends on %s", strings.TrimSpace(dep))
		}
	}
}
