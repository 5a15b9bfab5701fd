package store

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// TestRedact: no password of a database or Redis address reaches a
// message, also when the address does not parse as a URL or carries the
// password as a query parameter.
func TestRedact(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:hunter2@127.0.0.1:5432/x":         "postgres://u:xxxxx@127.0.0.1:5432/x",
		"postgres://u:hun#ter2@127.0.0.1:5432/x":        "postgres://xxxxx@127.0.0.1:5432/x",
		"postgres://u:hunter2@bad host/x":               "postgres://xxxxx@bad host/x",
		"postgres://u:p@ss/w0rd@db.internal/x?ssl=true": "postgres://xxxxx@db.internal/x?ssl=true",
		"host=db user=u password=hunter2 dbname=x":      "host=db user=u password=xxxxx dbname=x",
		"host=db user=u password='hun ter2' dbname=x":   "host=db user=u password=xxxxx dbname=x",
		"postgres://127.0.0.1/x":                        "postgres://127.0.0.1/x",
		// Passwords as query parameters, which libpq and pgx read too.
		"postgres://u@127.0.0.1:5432/db?password=pgLEAK":                              "postgres://u@127.0.0.1:5432/db?password=xxxxx",
		"postgres://u@db/x?sslmode=verify-full&sslpassword=keyLEAK&connect_timeout=5": "postgres://u@db/x?sslmode=verify-full&sslpassword=xxxxx&connect_timeout=5",
		"postgres://u@db/x?pass%77ord=pgLEAK":                                         "postgres://u@db/x?pass%77ord=xxxxx",
		"postgres://u:hunter2@bad host/x?password=pgLEAK":                             "postgres://xxxxx@bad host/x?password=xxxxx",
		"host=db user=u sslpassword=keyLEAK dbname=x":                                 "host=db user=u sslpassword=xxxxx dbname=x",
		// Redis URLs that do not parse: a bad port, an unclosed '['.
		"redis://:pwLEAK@127.0.0.1:abc/3":               "redis://xxxxx@127.0.0.1:abc/3",
		"redis://user:pwLEAK@[::1":                      "redis://xxxxx@[::1",
		"redis://:pwLEAK@127.0.0.1:6379/0":              "redis://:xxxxx@127.0.0.1:6379/0",
		"file:/var/lib/momopay/momopay.db?_pragma=x(1)": "file:/var/lib/momopay/momopay.db?_pragma=x(1)",
	} {
		got := Redact(dsn)
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", dsn, got, want)
		}
		for _, secret := range []string{"hunter2", "hun#ter2", "hun ter2", "p@ss/w0rd", "ter2", "LEAK"} {
			if strings.Contains(dsn, secret) && strings.Contains(got, secret) {
				t.Errorf("Redact(%q) = %q still holds %q", dsn, got, secret)
			}
		}
	}
}

// TestParseURLKeepsPasswordsOut: addresses refused by ParseURL do not
// quote their passwords; a PostgreSQL URL whose password would spill into
// the host or database name is refused, saying how to write it.
func TestParseURLKeepsPasswordsOut(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:p@ss/w0rd@127.0.0.1:5432/x",
		"postgres://u:hun#ter2@127.0.0.1:5432/x",
		"hostx=db password=w0rd dbname=x",
	} {
		_, _, err := ParseURL(dsn)
		if err == nil {
			t.Errorf("ParseURL(%q) accepted it", dsn)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "w0rd") || strings.Contains(msg, "ter2") {
			t.Errorf("ParseURL(%q): %s", dsn, msg)
		}
	}
	if _, _, err := ParseURL("postgres://u:p%40ss%2Fw0rd@127.0.0.1:5432/x"); err != nil {
		t.Errorf("a percent-encoded password: %v", err)
	}
}

// TestOpenKeepsParameterPasswordsOut: a PostgreSQL URL that pgx cannot
// parse is named in the error, and pgx quotes it too, hiding a password
// in the user part but not one given as a parameter. Before, "cannot
// parse `postgres://...&password=w0rd`" reached serve's and config
// check's output.
func TestOpenKeepsParameterPasswordsOut(t *testing.T) {
	for _, dsn := range []string{
		"postgres://postgres@127.0.0.1:5432/x?sslmode=bogus&password=w0rd",
		"postgres://postgres@127.0.0.1:5432/x?sslpassword=w0rd&sslmode=bogus",
		"postgres://postgres@127.0.0.1:5432/x?target_session_attrs=bogus&password=w0rd",
		"postgres://postgres@127.0.0.1:5432/x?sslmode=verify-full&sslrootcert=/nonexistent&password=w0rd",
	} {
		db, err := Open(t.Context(), dsn)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) worked", dsn)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "w0rd") || !strings.Contains(msg, "password=xxxxx") || !strings.Contains(msg, "cannot parse it: ") {
			t.Errorf("Open(%q): %s", dsn, msg)
		}
	}
}

// TestOpenGivesUpOnASilentHost: a PostgreSQL host that accepts the
// connection and never answers ends Open with an error after
// defaultConnectTimeout, naming the host. Before, Open (and serve's start,
// with it) waited for ever.
func TestOpenGivesUpOnASilentHost(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	done := make(chan error, 1)
	go func() {
		db, err := Open(context.Background(), "postgres://u:w0rd@"+ln.Addr().String()+"/x")
		if err == nil {
			db.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || strings.Contains(err.Error(), "w0rd") {
			t.Errorf("Open on a silent host: %v", err)
		}
	case <-time.After(6 * defaultConnectTimeout):
		t.Fatalf("Open still waits on a silent host after %s", 6*defaultConnectTimeout)
	}
}
