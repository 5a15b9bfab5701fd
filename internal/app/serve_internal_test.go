package app

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/momopay/momopay/internal/testdb"
)

// TestDemoMerchantOnlyInSandbox: a first start seeds the demo merchant and
// prints its key in sandbox mode only. Live mode cannot start in this
// build (no real adapters), so the mode is set on an opened app.
func TestDemoMerchantOnlyInSandbox(t *testing.T) {
	t.Parallel()
	a, err := Open(t.Context(), Config{DatabaseURL: testdb.URL(t, "sqlite"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var out bytes.Buffer
	c := &cli{stdout: &out}
	a.cfg.Mode = ModeLive
	if err := c.seedDemo(t.Context(), a, "http://127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Merchants.Count(t.Context()); n != 0 || out.Len() != 0 {
		t.Fatalf("live mode: %d merchants, printed %q", n, out.String())
	}
	a.cfg.Mode = ModeSandbox
	if err := c.seedDemo(t.Context(), a, "http://127.0.0.1:8080"); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Merchants.Count(t.Context()); n != 1 || !strings.Contains(out.String(), "API key:     service_live_") ||
		!strings.Contains(out.String(), "dashboard:   http://127.0.0.1:8080/ ") {
		t.Fatalf("sandbox mode: %d merchants, printed %q", n, out.String())
	}
}

// TestDemoSeededOnceByInstancesStartingTogether: instances started at the
// same moment on a new database all find no merchant; one creates and
// prints the demo merchant, and the others start without an error.
func TestDemoSeededOnceByInstancesStartingTogether(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, engine string) {
		url := testdb.URL(t, engine)
		const instances = 4
		apps := make([]*App, instances)
		for i := range apps {
			a, err := Open(t.Context(), Config{DatabaseURL: url, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			apps[i] = a
		}
		outs := make([]bytes.Buffer, instances)
		errs := make(chan error, instances)
		start := make(chan struct{})
		for i, a := range apps {
			go func() {
				<-start
				errs <- (&cli{stdout: &outs[i]}).seedDemo(t.Context(), a, "http://127.0.0.1:8080")
			}()
		}
		close(start)
		for range instances {
			if err := <-errs; err != nil {
				t.Errorf("an instance's first start: %v", err)
			}
		}
		printed := 0
		for i := range outs {
			if strings.Contains(outs[i].String(), "API key:") {
				printed++
			}
		}
		if n, _ := apps[0].Merchants.Count(t.Context()); n != 1 || printed != 1 {
			t.Errorf("%d merchants, %d instances printed the demo; want 1 and 1", n, printed)
		}
	})
}

// TestBrowsableURL: the banner's URL is one a person can open; a wildcard
// listen address becomes loopback and is said to listen everywhere.
func TestBrowsableURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr       string
		want       string
		everywhere bool
	}{
		{":8085", "http://127.0.0.1:8085", true},
		{"[::]:8085", "http://127.0.0.1:8085", true},
		{"0.0.0.0:8085", "http://127.0.0.1:8085", true},
		{"127.0.0.1:8085", "http://127.0.0.1:8085", false},
		{"[::1]:8085", "http://[::1]:8085", false},
		{"192.0.2.7:8085", "http://192.0.2.7:8085", false},
	}
	for _, c := range cases {
		tcp, err := net.ResolveTCPAddr("tcp", c.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got, everywhere := browsableURL(tcp); got != c.want || everywhere != c.everywhere {
			t.Errorf("%s: %s %t, want %s %t", c.addr, got, everywhere, c.want, c.everywhere)
		}
	}
}

// TestLooseFileModeWarning: serve warns about a database file from before
// files were created 0600, and is quiet about one that is owner-only.
func TestLooseFileModeWarning(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if w := looseFileMode("sqlite:" + path); w != "" {
		t.Errorf("0600 file: %q", w)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if w := looseFileMode(path); !strings.Contains(w, "chmod 600 "+path) {
		t.Errorf("0644 file: %q", w)
	}
	if w := looseFileMode("postgres://u@h/db"); w != "" {
		t.Errorf("PostgreSQL: %q", w)
	}
}
