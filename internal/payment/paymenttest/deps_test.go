package paymenttest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestSuiteImportsNoStoreOrSQL keeps the suite to the domain's language:
// were it to reach into internal/store or SQL, it would test one
// implementation instead of the interface, and drag SQL into the domain's
// test support.
func TestSuiteImportsNoStoreOrSQL(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.Lines(string(out)) {
		switch dep = strings.TrimSpace(dep); dep {
		case "database/sql", "net/http", "github.com/momopay/momopay/internal/store":
			t.Errorf("internal/payment/paymenttest depends on %s", dep)
		}
	}
}
