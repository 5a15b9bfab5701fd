package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/momopay/momopay/internal/store"
)

// backup writes an online, consistent copy of a SQLite database (see
// store.DB.BackupSQLite). PostgreSQL has its own tools, which do it better
// than momopay could: pg_dump, and WAL archiving for point-in-time
// recovery (docs/operations.md).
func (c *cli) backup(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("backup")
	to := fs.String("to", "", "the file to write the copy to; it must not exist yet")
	if err := c.parseNone(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return errors.New("backup needs --to FILE, a file that does not exist yet: usage: momopay " + syntaxOf("backup"))
	}
	dialect, _, err := store.ParseURL(*db)
	if err != nil {
		return err
	}
	if dialect == store.Postgres {
		return fmt.Errorf("momopay backup copies SQLite databases only; back PostgreSQL up with its own tools: pg_dump --format=custom --file=momopay.dump '%s' for a snapshot, and WAL archiving for point-in-time recovery (see docs/operations.md)", store.Redact(*db))
	}
	d, err := openDatabase(ctx, Config{DatabaseURL: *db, ExistingDatabase: true})
	if err != nil {
		return err
	}
	defer d.Close()
	info, err := d.BackupSQLite(ctx, *to)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(info)
	}
	fmt.Fprintf(c.stdout, "backed up to %s: %s, %d bytes, schema version %d\n",
		info.Path, plural(int(info.Transactions), "transaction"), info.Bytes, info.SchemaVersion)
	return nil
}
