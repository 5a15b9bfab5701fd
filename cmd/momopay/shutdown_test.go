package main_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/testdb"
)

// TestShutdownGraceHandsJobsBack: work still running when the shutdown
// grace ends (a webhook attempt whose receiver never answers) is cancelled
// and handed back, not left held: the attempt is recorded as interrupted
// and the delivery is pending with no lease, due for the next instance.
// serve still exits 0, soon after the grace.
func TestShutdownGraceHandsJobsBack(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		dbURL := testdb.URL(t, engine)
		rc := newHangingReceiver(t)
		p := serve(t, dbURL, "--shutdown-grace", "1s")
		key, merchant := demoCredentials(t, p)
		webhookCreate(t, dbURL, merchant, rc.URL)
		create(t, p, key, "grace-1", "+23560000001")
		rc.waitFirst(t, 15*time.Second) // the attempt now hangs

		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
		if took := time.Since(sent); took < time.Second || took > 4*time.Second {
			t.Errorf("stopped %s after SIGTERM with a 1 s grace and a hanging job", took.Round(time.Millisecond))
		}
		db, err := store.Open(t.Context(), dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var state, stage string
		var leased bool
		if err := db.QueryRow(`SELECT d.state, d.lease_until IS NOT NULL, a.stage
			FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id`).Scan(&state, &leased, &stage); err != nil {
			t.Fatal(err)
		}
		if state != "pending" || leased || stage != "interrupted" {
			t.Errorf("after the stop: delivery %s (leased %v), its attempt %s; want pending, no lease, interrupted", state, leased, stage)
		}
	})
}

func webhookCreate(t *testing.T, dbURL, merchant, url string) {
	t.Helper()
	if out, err := exec.Command(binary, "webhook", "create", "--merchant", merchant, "--url", url, "--db", dbURL).CombinedOutput(); err != nil {
		t.Fatalf("webhook create: %v %s", err, out)
	}
}

// TestStopsWhileDatabaseHangs: PostgreSQL stops answering (its process
// stopped, or its host gone without a reset), then serve gets SIGTERM: it
// ends within its grace and the 5 s it gives the database connections to
// close, rather than wait on them for ever. A proxy between the two
// freezes: it keeps every connection open and passes nothing more.
func TestStopsWhileDatabaseHangs(t *testing.T) {
	t.Parallel()
	dbURL, err := url.Parse(testdb.URL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFreezingProxy(t, dbURL.Host)
	dbURL.Host = proxy.addr
	p := serve(t, dbURL.String(), "--shutdown-grace", "2s")
	call(t, "GET", p.url+"/v1/transactions", "no-key", "") // the server answers
	proxy.freeze()
	time.Sleep(time.Second)
	if err := stop(t, p, syscall.SIGTERM, 40*time.Second); err != nil {
		t.Errorf("exit after SIGTERM with the database hanging: %v\n%s", err, p.stderr)
	}
}

// freezingProxy forwards TCP connections to target until freeze; from then
// on it keeps them open and silent, as a stopped server does.
type freezingProxy struct {
	addr   string
	frozen chan struct{}
	once   sync.Once
}

func newFreezingProxy(t *testing.T, target string) *freezingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{addr: ln.Addr().String(), frozen: make(chan struct{})}
	var conns []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, client)
			mu.Unlock()
			select {
			case <-p.frozen:
				continue // accepted, never answered
			default:
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, server)
			mu.Unlock()
			go p.pipe(server, client)
			go p.pipe(client, server)
		}
	}()
	return p
}

// pipe copies from src to dst until the proxy freezes.
func (p *freezingProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.frozen:
			return // what arrives now is dropped, and nothing is closed
		default:
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *freezingProxy) freeze() { p.once.Do(func() { close(p.frozen) }) }

// TestStopAnswersWaitingRequests: SIGTERM while another process holds the
// SQLite write lock and creates wait for it: each accepted create is
// answered, 503 with retry_after (nothing written), before the grace ends,
// and serve exits 0. Before, they waited out their 25 s budget past the
// grace and were cut off with no answer.
func TestStopAnswersWaitingRequests(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "stop.db")
	p := serve(t, db, "--shutdown-grace", "8s")
	m := apiKeyLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no API key printed on first start: %s", p.stdout)
	}
	lock := testdb.HoldSQLiteWriteLock(t, db)
	defer lock.ExecContext(t.Context(), "ROLLBACK")

	answers := make([]map[string]any, 3)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", p.url+"/v1/transactions", strings.NewReader(fmt.Sprintf(
				`{"reference":"stop-%d","amount":1500,"currency":"XAF","operator":"AIRTEL","phone_number":"+23560000001"}`, i)))
			req.Header.Set("Authorization", "Bearer "+m[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("create %d waiting at SIGTERM: no answer: %v", i, err)
				return
			}
			defer resp.Body.Close()
			json.NewDecoder(resp.Body).Decode(&answers[i])
		})
	}
	time.Sleep(time.Second) // accepted, and waiting for the writer
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, a := range answers {
		e, _ := a["error"].(map[string]any)
		if e["code"] != "GATEWAY_UNAVAILABLE" || e["retry_after"] == nil {
			t.Errorf("create %d waiting at SIGTERM: %v", i, a)
		}
	}
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("exit: %v\n%s", err, p.stderr)
	}
}
