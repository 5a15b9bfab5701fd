// Command momopay-load measures whether background work keeps up with a
// sustained stream of payments: it starts `momopay serve` on a fresh
// PostgreSQL database (sandbox mode, a short PENDING window), creates
// payments at a fixed rate from several merchants, then reads every one back
// and reports how late the background jobs settled them:
//
//   - TIMEOUT (+23560000003, never answered): updated_at - expires_at, the
//     expiry check's lateness;
//   - poll-only SUCCESS (+23560000006, callback lost): updated_at -
//     created_at, found by the status polls;
//   - callback SUCCESS (+23560000001): updated_at - created_at;
//   - and the latency of the creates themselves.
//
// All traffic goes to 127.0.0.1, and the run is bounded in count and time.
// It is a measurement, not a test: run it on an otherwise quiet machine.
//
//	go build -o /tmp/momopay ./cmd/momopay
//	go run ./cmd/momopay-load -bin /tmp/momopay -rate 100 -duration 60s
//
// On the 2-core development VM, shared with other work (load average about
// 11), PostgreSQL 15, 100 creates/s for 60 s, PENDING window 30 s, median
// of three runs: TIMEOUT 0.17 s past expires_at at p50 and 0.93 s at p99;
// poll-only SUCCESS 3.2 s at p50 and 3.8 s at p95; creates 82 ms at p50 and
// 0.49 s at p99. At 150/s that machine fell behind (up to 1,800 due jobs
// waiting, TIMEOUT p99 4.6 s).
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// The sandbox payers the load uses (see the README's sandbox table).
const (
	phoneCallback = "+23560000001"
	phoneNoAnswer = "+23560000003"
	phonePollOnly = "+23560000006"
)

type config struct {
	bin       string
	adminURL  string
	rate      float64
	duration  time.Duration
	ttl       time.Duration
	merchants int
	inflight  int
	keep      bool
	serveArgs string
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "", "momopay binary to run (required; go build -o /tmp/momopay ./cmd/momopay)")
	flag.StringVar(&c.adminURL, "db", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server to create the throw-away database on")
	flag.Float64Var(&c.rate, "rate", 100, "payments created per second")
	flag.DurationVar(&c.duration, "duration", time.Minute, "how long to create payments (at most 10m)")
	flag.DurationVar(&c.ttl, "ttl", 30*time.Second, "serve --pending-ttl: how long a payment stays PENDING")
	flag.IntVar(&c.merchants, "merchants", 4, "merchants (one API key each) sharing the rate, so no key passes the 50/s rate limit")
	flag.IntVar(&c.inflight, "inflight", 256, "at most this many creates in flight; more are counted as the client falling behind")
	flag.BoolVar(&c.keep, "keep", false, "keep the database afterwards (it is dropped by default)")
	flag.StringVar(&c.serveArgs, "serve-args", "", "extra arguments for momopay serve, space-separated")
	flag.Parse()
	if c.bin == "" || c.rate <= 0 || c.rate > 1000 || c.duration <= 0 || c.duration > 10*time.Minute || c.merchants < 1 {
		fmt.Fprintln(os.Stderr, "momopay-load: give -bin, a -rate in (0, 1000] and a -duration in (0, 10m]; see -h")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "momopay-load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if u, err := url.Parse(c.adminURL); err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		return fmt.Errorf("-db must be a PostgreSQL on 127.0.0.1, not %q", c.adminURL)
	}
	admin, err := sql.Open("pgx", c.adminURL)
	if err != nil {
		return err
	}
	defer admin.Close()
	name := "momopay_load_" + strings.ToLower(rand.Text()[:10])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	u, _ := url.Parse(c.adminURL)
	u.Path = "/" + name
	dbURL := u.String()
	if c.keep {
		fmt.Println("database:", dbURL)
	} else {
		defer admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	}

	if out, err := exec.CommandContext(ctx, c.bin, "migrate", "--db", dbURL).CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v: %s", err, out)
	}
	keys := make([]string, c.merchants)
	for i := range keys {
		if keys[i], err = newMerchantKey(ctx, c.bin, dbURL, i); err != nil {
			return err
		}
	}
	srv, err := startServer(ctx, c, dbURL)
	if err != nil {
		return err
	}
	defer srv.stop()

	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	backlog := watchBacklog(ctx, db)

	fmt.Printf("creating %.0f payments/s for %s from %d merchants, PENDING window %s, against %s\n", c.rate, c.duration, c.merchants, c.ttl, srv.url)
	results := generate(ctx, c, srv.url, keys)
	fmt.Printf("created %d payments; waiting for the PENDING window to end\n", countOK(results))
	select {
	case <-time.After(c.ttl + 10*time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	readBack(ctx, srv.url, results, 30*time.Second)
	worst := backlog()
	report(os.Stdout, c, results, worst)
	return nil
}

// newMerchantKey creates merchant i and an API key for it with the CLI.
func newMerchantKey(ctx context.Context, bin, dbURL string, i int) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "merchant", "create", "--name", fmt.Sprintf("Load %d", i),
		"--email", fmt.Sprintf("load-%d@example.com", i), "--password-stdin", "--json", "--db", dbURL)
	cmd.Stdin = strings.NewReader("a long enough password\n")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("merchant create: %w: %s", err, out)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(out, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("merchant create printed %q", out)
	}
	out, err = exec.CommandContext(ctx, bin, "apikey", "create", "--merchant", m.ID, "--json", "--db", dbURL).Output()
	if err != nil {
		return "", fmt.Errorf("apikey create: %w: %s", err, out)
	}
	var k struct{ Key string }
	if err := json.Unmarshal(out, &k); err != nil || k.Key == "" {
		return "", fmt.Errorf("apikey create printed %q", out)
	}
	return k.Key, nil
}

type server struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

var listening = regexp.MustCompile(`msg="momopay listening" url=(http://\S+)`)

// startServer runs momopay serve on a port the kernel picks and reads the
// address from its log; the rest of the log goes to momopay-load.log.
func startServer(ctx context.Context, c config, dbURL string) (*server, error) {
	// No admin listener (its default port may be taken), and the text log
	// that listening matches.
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", dbURL, "--pending-ttl", c.ttl.String(),
		"--admin-addr", "off", "--log-format", "text"}
	args = append(args, strings.Fields(c.serveArgs)...)
	cmd := exec.Command(c.bin, args...)
	logFile, err := os.Create("momopay-load.log")
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		defer close(s.done)
		defer logFile.Close()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			fmt.Fprintln(logFile, sc.Text())
		}
	}()
	select {
	case s.url = <-found:
		return s, nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	s.stop()
	return nil, errors.New("momopay serve did not start; see momopay-load.log")
}

// stop ends the server as an operator would (SIGTERM) and waits for it.
func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
	}
	s.cmd.Wait()
}

// watchBacklog samples, every second, how many jobs are due but not yet
// started (available and scheduled more than a second ago), and returns a
// function that stops sampling and gives the largest sample.
func watchBacklog(ctx context.Context, db *sql.DB) func() int {
	ctx, cancel := context.WithCancel(ctx)
	var worst int
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM river_job
				WHERE state = 'available' AND scheduled_at < now() - interval '1 second'`).Scan(&n); err == nil {
				worst = max(worst, n)
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		return worst
	}
}

// result is one create and, after readBack, the payment's final row.
type result struct {
	phone     string
	status    int // HTTP status of the create; 0 when not sent
	latency   time.Duration
	id, key   string
	final     string
	created   time.Time
	updated   time.Time
	expiresAt time.Time
}

// generate sends creates at c.rate for c.duration, round-robin over keys
// and over the payer mix, each at its own instant (an open loop: a slow
// answer does not slow the next send).
func generate(ctx context.Context, c config, base string, keys []string) []*result {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: c.inflight}}
	// 45% never answered, 45% poll-only, 10% answered by callback.
	mix := []string{phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly, phoneNoAnswer,
		phonePollOnly, phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly, phoneCallback,
		phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly, phoneNoAnswer, phonePollOnly,
		phoneNoAnswer, phonePollOnly, phoneCallback}
	n := int(c.rate * c.duration.Seconds())
	results := make([]*result, n)
	sem := make(chan struct{}, c.inflight)
	var wg sync.WaitGroup
	start := time.Now()
	run := strings.ToLower(rand.Text()[:6])
	for i := range n {
		r := &result{phone: mix[i%len(mix)], key: keys[i%len(keys)]}
		results[i] = r
		at := start.Add(time.Duration(float64(i) / c.rate * float64(time.Second)))
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			wg.Wait()
			return results[:i]
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // the client itself fell behind: counted as not sent
		}
		wg.Go(func() {
			defer func() { <-sem }()
			body := fmt.Sprintf(`{"reference":"load-%s-%d","amount":1500,"currency":"XAF","operator":"%s","phone_number":"%s"}`,
				run, i, []string{"AIRTEL", "MOOV"}[i%2], r.phone)
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/transactions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+r.key)
			req.Header.Set("Content-Type", "application/json")
			sent := time.Now()
			resp, err := client.Do(req)
			r.latency = time.Since(sent)
			if err != nil {
				r.status = -1
				return
			}
			defer resp.Body.Close()
			r.status = resp.StatusCode
			var tx struct{ ID string }
			json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&tx)
			r.id = tx.ID
		})
	}
	wg.Wait()
	return results
}

func countOK(rs []*result) int {
	n := 0
	for _, r := range rs {
		if r.status == http.StatusCreated {
			n++
		}
	}
	return n
}

// readBack reads every created payment; those still PENDING are read again
// until settled or until patience runs out.
func readBack(ctx context.Context, base string, rs []*result, patience time.Duration) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	deadline := time.Now().Add(patience)
	for {
		var todo []*result
		for _, r := range rs {
			if r.status == http.StatusCreated && (r.final == "" || r.final == "PENDING") {
				todo = append(todo, r)
			}
		}
		sem := make(chan struct{}, 16)
		var wg sync.WaitGroup
		for _, r := range todo {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/transactions/"+r.id, nil)
				req.Header.Set("Authorization", "Bearer "+r.key)
				resp, err := client.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				var tx struct {
					Status    string    `json:"status"`
					CreatedAt time.Time `json:"created_at"`
					UpdatedAt time.Time `json:"updated_at"`
					ExpiresAt time.Time `json:"expires_at"`
				}
				if json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&tx) != nil || tx.Status == "" {
					return // an error (429 under load, say): read it again next round
				}
				r.final, r.created, r.updated, r.expiresAt = tx.Status, tx.CreatedAt, tx.UpdatedAt, tx.ExpiresAt
			})
		}
		wg.Wait()
		pending := 0
		for _, r := range todo {
			if r.final == "" || r.final == "PENDING" {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(2 * time.Second)
	}
}

func report(w io.Writer, c config, rs []*result, backlog int) {
	codes := map[int]int{}
	var creates, timeouts, pollOnly, callback []time.Duration
	wrong := map[string]int{}
	for _, r := range rs {
		codes[r.status]++
		if r.status != http.StatusCreated {
			continue
		}
		creates = append(creates, r.latency)
		switch {
		case r.phone == phoneNoAnswer && r.final == "TIMEOUT":
			timeouts = append(timeouts, r.updated.Sub(r.expiresAt))
		case r.phone == phonePollOnly && r.final == "SUCCESS":
			pollOnly = append(pollOnly, r.updated.Sub(r.created))
		case r.phone == phoneCallback && r.final == "SUCCESS":
			callback = append(callback, r.updated.Sub(r.created))
		default:
			wrong[r.phone+" "+r.final]++
		}
	}
	fmt.Fprintf(w, "\nrate %.0f/s for %s, %d merchants, PENDING window %s\n", c.rate, c.duration, c.merchants, c.ttl)
	fmt.Fprintf(w, "create answers by HTTP status: %v (0 = not sent: the client fell behind, -1 = network error)\n", codes)
	line(w, "create latency", creates)
	line(w, "TIMEOUT: updated_at - expires_at", timeouts)
	line(w, "poll-only SUCCESS: updated_at - created_at", pollOnly)
	line(w, "callback SUCCESS: updated_at - created_at", callback)
	fmt.Fprintf(w, "most due jobs waiting (sampled every second): %d\n", backlog)
	if len(wrong) > 0 {
		fmt.Fprintf(w, "unexpected outcomes (payer, status): %v\n", wrong)
	}
	ok := percentile(timeouts, 99) <= 2*time.Second && percentile(pollOnly, 95) <= 10*time.Second && len(wrong) == 0
	fmt.Fprintf(w, "target (TIMEOUT p99 <= 2s, poll-only SUCCESS p95 <= 10s, every payment settled right): %v\n", map[bool]string{true: "met", false: "NOT met"}[ok])
}

func line(w io.Writer, what string, ds []time.Duration) {
	if len(ds) == 0 {
		fmt.Fprintf(w, "%-44s none\n", what)
		return
	}
	fmt.Fprintf(w, "%-44s n=%-6d p50 %-8s p95 %-8s p99 %-8s max %s\n", what, len(ds),
		round(percentile(ds, 50)), round(percentile(ds, 95)), round(percentile(ds, 99)), round(percentile(ds, 100)))
}

func round(d time.Duration) time.Duration {
	if d < 10*time.Millisecond && d > -10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// percentile is the nearest-rank percentile of ds (which it sorts).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := (p*len(ds)+99)/100 - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
