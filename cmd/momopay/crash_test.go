package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// The promise after a SIGKILL (issue 8, item 2): no payment stays PENDING
// more than this past its expires_at, and a webhook attempt the dead
// process was making is made again within this of the kill.
const crashBound = 30 * time.Second

// TestKilledProcessJobsResume kills momopay while it is making a webhook
// attempt (the receiver hangs) and while expiry checks are running, then
// checks that the work the dead process held is taken up in time: by a
// restarted process (SQLite, PostgreSQL) or by a second instance that was
// already running (PostgreSQL). River alone would leave those jobs
// "running" until its rescuer took them back, minutes later.
//
// On PostgreSQL the test holds the payments' rows locked across expires_at,
// so the expiry checks are certainly in flight (waiting on the settling
// UPDATE) when the process dies; on SQLite it kills the moment they are
// seen running.
func TestKilledProcessJobsResume(t *testing.T) {
	variants := []struct {
		name, engine string
		second       bool // a second instance runs before the kill; no restart
	}{
		{"sqlite/restart", "sqlite", false},
		{"postgres/restart", "postgres", false},
		{"postgres/second-instance", "postgres", true},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			testKill(t, v.engine, v.second)
		})
	}
}

func testKill(t *testing.T, engine string, second bool) {
	const ttl = 5 * time.Second
	dbURL := testdb.URL(t, engine)
	rc := newHangingReceiver(t)
	first := serve(t, dbURL, "--pending-ttl", ttl.String())
	key, merchant := demoCredentials(t, first)
	if out, err := exec.Command(binary, "webhook", "create", "--merchant", merchant, "--url", rc.URL, "--db", dbURL).CombinedOutput(); err != nil {
		t.Fatalf("webhook create: %v %s", err, out)
	}

	// One payment answered at once (its SUCCESS event is the attempt that
	// will hang), and several never answered (TIMEOUT at expires_at).
	ids := []string{create(t, first, key, "crash-ok", "+23560000001")}
	for i := range 5 {
		ids = append(ids, create(t, first, key, fmt.Sprintf("crash-no-answer-%d", i), "+23560000003"))
	}
	db, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	hanging := rc.waitFirst(t, 3*ttl)
	expiresAt := get(t, first, key, ids[1]).ExpiresAt
	var unlock func()
	if engine == "postgres" {
		time.Sleep(time.Until(expiresAt.Add(-time.Second)))
		unlock = lockRows(t, db, ids[1:])
	}
	// Wait until the expiry checks run: with the rows locked they stay
	// running; without, the kill comes the moment one is seen.
	waitRunning(t, db, "payment_expire", expiresAt.Add(3*time.Second))
	var other *process
	if second {
		other = serve(t, dbURL, "--pending-ttl", ttl.String())
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	first.cmd.Wait()
	held := runningJobs(t, db)
	t.Logf("killed %s after expires_at; held by the dead process: %v", killed.Sub(expiresAt).Round(time.Millisecond), held)
	if engine == "postgres" && held["payment_expire"] == 0 {
		t.Errorf("no expiry check was in flight at the kill: the test proves nothing about them")
	}
	if unlock != nil {
		unlock()
	}

	live := other
	if live == nil {
		live = serve(t, dbURL, "--pending-ttl", ttl.String())
	}
	deadline := killed.Add(crashBound + 5*time.Second)
	var latest time.Duration
	for _, id := range ids {
		for {
			tx := get(t, live, key, id)
			if tx.Status != "PENDING" {
				if late := tx.UpdatedAt.Sub(tx.ExpiresAt); id != ids[0] {
					latest = max(latest, late)
					if late > crashBound {
						t.Errorf("%s became %s %s after expires_at", id, tx.Status, late.Round(time.Millisecond))
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still PENDING %s after expires_at", id, time.Since(tx.ExpiresAt).Round(time.Second))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Logf("the last payment held at the kill was final %s after expires_at", latest.Round(time.Millisecond))
	again := rc.waitAgain(t, hanging, deadline)
	if late := again.Sub(killed); late > crashBound {
		t.Errorf("the webhook attempt held at the kill was made again %s after it", late.Round(time.Millisecond))
	} else {
		t.Logf("webhook attempt resumed %s after the kill", late.Round(time.Millisecond))
	}
}

var merchantLine = regexp.MustCompile(`merchant id:\s+(\S+)`)

func demoCredentials(t *testing.T, p *process) (key, merchant string) {
	t.Helper()
	k, m := apiKeyLine.FindStringSubmatch(p.stdout.String()), merchantLine.FindStringSubmatch(p.stdout.String())
	if k == nil || m == nil {
		t.Fatalf("no demo credentials printed on first start: %s", p.stdout)
	}
	return k[1], m[1]
}

func create(t *testing.T, p *process, key, ref, phone string) string {
	t.Helper()
	body := fmt.Sprintf(`{"reference":%q,"amount":700,"currency":"XAF","operator":"AIRTEL","phone_number":%q}`, ref, phone)
	r := call(t, "POST", p.url+"/v1/transactions", key, body)
	if r["status"] != "PENDING" {
		t.Fatalf("create %s: %v", ref, r)
	}
	return r["id"].(string)
}

type transaction struct {
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expires_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func get(t *testing.T, p *process, key, id string) transaction {
	t.Helper()
	r := call(t, "GET", p.url+"/v1/transactions/"+id, key, "")
	var tx transaction
	b, _ := json.Marshal(r)
	if err := json.Unmarshal(b, &tx); err != nil || tx.Status == "" {
		t.Fatalf("get %s: %v %v", id, r, err)
	}
	return tx
}

// lockRows holds the transactions' rows locked (PostgreSQL) until unlock,
// so their settling UPDATE waits and the expiry checks stay in flight.
func lockRows(t *testing.T, db *store.DB, ids []string) (unlock func()) {
	t.Helper()
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := tx.Exec(`SELECT id FROM transactions WHERE id = $1 FOR UPDATE`, id); err != nil {
			tx.Rollback()
			t.Fatal(err)
		}
	}
	var once sync.Once
	unlock = func() { once.Do(func() { tx.Rollback() }) }
	t.Cleanup(unlock)
	return unlock
}

// waitRunning waits until River shows a job of kind running.
func waitRunning(t *testing.T, db *store.DB, kind string, until time.Time) {
	t.Helper()
	for time.Now().Before(until) {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'running'`, kind).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no %s job ran by %s", kind, until.Format(time.TimeOnly))
}

// runningJobs counts the "running" jobs of each kind.
func runningJobs(t *testing.T, db *store.DB) map[string]int {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT kind, count(*) FROM river_job WHERE state = 'running' GROUP BY kind ORDER BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	counts := map[string]int{}
	for rows.Next() {
		var kind string
		var n int
		if err := rows.Scan(&kind, &n); err != nil {
			t.Fatal(err)
		}
		counts[kind] = n
	}
	return counts
}

// hangingReceiver is a merchant's webhook endpoint that never answers the
// first request it gets (so that attempt is in flight when the process is
// killed) and answers 200 to every other one.
type hangingReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	first    string // delivery id of the request left hanging
	arrivals map[string][]time.Time
	got      chan struct{}
}

func newHangingReceiver(t *testing.T) *hangingReceiver {
	rc := &hangingReceiver{arrivals: map[string][]time.Time{}, got: make(chan struct{}, 1000)}
	release := make(chan struct{})
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Service-Delivery-Id")
		rc.mu.Lock()
		rc.arrivals[id] = append(rc.arrivals[id], time.Now())
		hang := rc.first == ""
		if hang {
			rc.first = id
		}
		rc.mu.Unlock()
		rc.got <- struct{}{}
		if hang {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.Close)
	t.Cleanup(func() { close(release) }) // runs first: frees the hanging handler
	return rc
}

// waitFirst waits for the first request, the one left hanging.
func (rc *hangingReceiver) waitFirst(t *testing.T, within time.Duration) string {
	t.Helper()
	deadline := time.After(within)
	for {
		rc.mu.Lock()
		id := rc.first
		rc.mu.Unlock()
		if id != "" {
			return id
		}
		select {
		case <-rc.got:
		case <-deadline:
			t.Fatal("no webhook attempt reached the receiver")
		}
	}
}

// waitAgain returns when delivery id arrived a second time.
func (rc *hangingReceiver) waitAgain(t *testing.T, id string, deadline time.Time) time.Time {
	t.Helper()
	timeout := time.After(time.Until(deadline))
	for {
		rc.mu.Lock()
		times := rc.arrivals[id]
		rc.mu.Unlock()
		if len(times) > 1 {
			return times[1]
		}
		select {
		case <-rc.got:
		case <-timeout:
			t.Fatalf("the webhook attempt held at the kill was not made again within %s", crashBound+5*time.Second)
		}
	}
}
