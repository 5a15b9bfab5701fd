package app_test

import (
	"database/sql"
	"net/http"
	"regexp"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/momopay/momopay/internal/testdb"
)

// schemaLock is the advisory lock a momopay process holds while it
// migrates (store.schemaLockKey, "momopay" in ASCII).
const schemaLock = int64(0x6d6f6d6f706179)

// TestAdminAnswersWhileMigrating: while serve waits to migrate (another
// instance holds the schema lock, as during a long migration), the admin
// listener already answers: alive, not ready, saying why. Before, it
// opened only after the migrations, and a liveness probe would have
// restarted the instance in the middle of them.
func TestAdminAnswersWhileMigrating(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t, "postgres")
	conn, err := openPostgres(t, url).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `SELECT pg_advisory_lock($1)`, schemaLock); err != nil {
		t.Fatal(err)
	}
	s := serveCLI(t, nil, "--db", url, "--admin-addr", "127.0.0.1:0")
	admin := s.urlOf("admin listening")
	if code, body := get(t, admin+"/livez"); code != http.StatusOK {
		t.Errorf("/livez while migrating: %d %s", code, body)
	}
	if code, body := get(t, admin+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "applying migrations") {
		t.Errorf("/readyz while migrating: %d %s, want 503 naming the migrations", code, body)
	}
	if strings.Contains(s.log.String(), "momopay listening") {
		t.Fatal("serve listened before its migrations")
	}
	if _, err := conn.ExecContext(t.Context(), `SELECT pg_advisory_unlock($1)`, schemaLock); err != nil {
		t.Fatal(err)
	}
	eventually(t, "/readyz 200 once migrated", func() bool { code, _ := get(t, admin+"/readyz"); return code == http.StatusOK })
}

// TestAdminAnswersDuringDrain: after SIGTERM, while a request held by a
// database lock is still being answered, the admin listener stays up:
// /livez answers 200 and /readyz 503 with its reason, until serve ends.
// Before, it closed at the signal, for the whole drain.
func TestAdminAnswersDuringDrain(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t, "postgres")
	s := serveCLI(t, nil, "--db", url, "--admin-addr", "127.0.0.1:0")
	admin, public := s.urlOf("admin listening"), s.urlOf("momopay listening")
	key := regexp.MustCompile(`service_[a-z]+_[A-Za-z0-9_-]+`).FindString(s.out.String())
	if key == "" {
		t.Fatalf("no API key in the first start's banner: %s", s.out.String())
	}
	db := openPostgres(t, url)
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`LOCK TABLE transactions IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, public+"/v1/transactions", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	eventually(t, "the list waiting for the lock", func() bool {
		var waiting int
		// The list's count (background work waits too, on other queries).
		err := db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%transaction_daily_totals%'`).Scan(&waiting)
		return err == nil && waiting > 0
	})
	stopped := make(chan error, 1)
	go func() { stopped <- s.stop() }()
	eventually(t, "/readyz 503 while draining", func() bool {
		code, body := get(t, admin+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "job client")
	})
	if code, body := get(t, admin+"/livez"); code != http.StatusOK {
		t.Errorf("/livez while draining: %d %s", code, body)
	}
	select {
	case code := <-answered:
		t.Fatalf("the held request was answered %d before the lock was let go", code)
	default:
	}
	tx.Rollback()
	if code := <-answered; code != http.StatusOK {
		t.Errorf("the held request: %d, want 200 after the drain", code)
	}
	if err := <-stopped; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// openPostgres opens the test's own connection to url, beside the served
// process's, to hold the locks it waits on.
func openPostgres(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
