package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// BackupInfo describes a copy BackupSQLite wrote.
type BackupInfo struct {
	Path          string `json:"file"`
	Bytes         int64  `json:"bytes"`
	Transactions  int64  `json:"transactions"`
	SchemaVersion int64  `json:"schema_version"`
}

// BackupExistsError says that the file a backup was to be written to
// already exists: a backup never overwrites anything.
type BackupExistsError struct{ Path string }

func (e *BackupExistsError) Error() string {
	return fmt.Sprintf("%s already exists: a backup never overwrites a file; name a new one or move that one away", e.Path)
}

// BackupSQLite writes a consistent copy of this SQLite database to path,
// which must not exist, while other connections and processes keep reading
// and writing it. VACUUM INTO reads one snapshot (in WAL mode it holds no
// lock that blocks writers), so the copy is the database as of one commit:
// never half a transaction, never a payment without its jobs.
//
// The copy is written to a temporary file in path's folder with mode 0600
// (it holds webhook secrets and password hashes), checked (quick_check,
// and the schema version and transactions counted), synced, and only then
// linked to path: path either does not exist or is the whole, checked copy.
func (db *DB) BackupSQLite(ctx context.Context, path string) (*BackupInfo, error) {
	if db.Dialect != SQLite {
		return nil, errors.New("only a SQLite database can be copied this way; back PostgreSQL up with pg_dump")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(abs); err == nil {
		return nil, &BackupExistsError{Path: abs}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(abs), "."+filepath.Base(abs)+".partial-*")
	if errors.Is(err, fs.ErrNotExist) {
		// Not the temporary file's name, which means nothing to the reader.
		return nil, fmt.Errorf("the backup's folder %s does not exist: create it first", filepath.Dir(abs))
	}
	if err != nil {
		return nil, fmt.Errorf("create the backup file: %w", err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath)
	if err := os.Chmod(tmpPath, sqliteFileMode); err != nil {
		return nil, err
	}
	// VACUUM INTO accepts an empty file as its target.
	if _, err := db.ExecContext(ctx, `VACUUM INTO $1`, tmpPath); err != nil {
		return nil, fmt.Errorf("copy the database: %w", err)
	}
	info, err := checkCopy(ctx, tmpPath)
	if err != nil {
		return nil, err
	}
	if err := syncFile(tmpPath); err != nil {
		return nil, err
	}
	// A hard link never replaces an existing file, so a file created at
	// path meanwhile is not overwritten either.
	if err := os.Link(tmpPath, abs); errors.Is(err, fs.ErrExist) {
		return nil, &BackupExistsError{Path: abs}
	} else if err != nil {
		return nil, fmt.Errorf("name the backup file: %w", err)
	}
	syncFile(filepath.Dir(abs))
	st, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	info.Path, info.Bytes = abs, st.Size()
	return info, nil
}

// checkCopy opens a fresh copy on its own, makes it a single
// self-contained file (rollback journal rather than WAL, so nothing beside
// it is needed), and checks that it reads back.
func checkCopy(ctx context.Context, path string) (*BackupInfo, error) {
	c, err := sql.Open("sqlite", "file:"+path+"?mode=rw")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetMaxOpenConns(1)
	var mode, check string
	if err := c.QueryRowContext(ctx, `PRAGMA journal_mode = DELETE`).Scan(&mode); err != nil {
		return nil, fmt.Errorf("check the copy: %w", err)
	}
	if err := c.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check); err != nil || check != "ok" {
		return nil, fmt.Errorf("check the copy: quick_check says %q (%v)", check, err)
	}
	info := &BackupInfo{}
	if err := c.QueryRowContext(ctx, `SELECT COALESCE(MAX(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&info.SchemaVersion); err != nil {
		return nil, fmt.Errorf("check the copy: read its schema version: %w", err)
	}
	if err := c.QueryRowContext(ctx, `SELECT COUNT(*) FROM transactions`).Scan(&info.Transactions); err != nil {
		return nil, fmt.Errorf("check the copy: count its transactions: %w", err)
	}
	return info, c.Close()
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
