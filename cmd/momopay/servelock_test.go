package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOneServePerSQLiteFile: a second serve on a SQLite file another one
// serves is refused at once, naming the file; once the first is gone
// (killed, here), the file can be served again. Before, the second ran a
// second set of job workers and webhook senders on the one writer.
func TestOneServePerSQLiteFile(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "one.db")
	first := serve(t, db)
	_, errOut, err := runWith(t, nil, "", "serve", "--addr", "127.0.0.1:0", "--db", db)
	if err == nil || !strings.Contains(errOut, "another momopay serve is already serving the SQLite database "+db) {
		t.Fatalf("second serve on one SQLite file: %v\n%s", err, errOut)
	}
	first.cmd.Process.Kill()
	first.cmd.Wait()
	serve(t, db)
}
