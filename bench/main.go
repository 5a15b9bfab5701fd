// Command bench is momopay's performance harness: one command that builds
// `momopay`, runs it on a throw-away PostgreSQL database and on a temporary
// SQLite file, measures each database's own limits in the same run (pgbench;
// a raw loop through the store's SQLite driver), drives the public API with
// a load generator over keep-alive connections, and prints throughput,
// latency percentiles, the ratios to the database alone and whether the
// targets of issue 11 are met.
//
//	go run ./bench                      # everything, both databases (10 to 15 minutes on 2 cores)
//	go run ./bench -only create,get -dbs postgres -duration 5s
//	go run ./bench -bin /tmp/momopay -json /tmp/bench.json
//
// Scenarios (-only): create, get, list, webhook (state change to webhook
// received), drain (a burst of webhook deliveries), sustain (200 creates/s
// with every poll and expiry on time). The database baselines run whenever
// create or get does.
//
// Only public interfaces are used (the CLI with --json, the HTTP API,
// /proc), so a binary built from an older or newer commit can be measured
// with -bin. Everything runs on 127.0.0.1, bounded in count and time. It is
// a measurement, not a test: the figures depend on what else the machine
// is doing, which is why the load average is printed with them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	bin         string
	pg          string
	pgbench     string
	dbs         []string
	only        map[string]bool
	duration    time.Duration
	baseline    time.Duration
	conns       int
	merchants   int
	listSeed    int
	webhookRate float64
	drain       int
	drainEPs    int
	loadHooks   bool
	sustainRate float64
	sustainFor  time.Duration
	ttl         time.Duration
	jsonOut     string
	profileDir  string
	keep        bool
}

// bothOperators alternates Airtel and Moov payments.
var bothOperators = []string{"AIRTEL", "MOOV"}

var scenarios = []string{"create", "get", "list", "webhook", "drain", "sustain"}

func parseFlags() (config, error) {
	var c config
	var dbs, only string
	flag.StringVar(&c.bin, "bin", "", "momopay binary to measure (default: build ./cmd/momopay from this checkout)")
	flag.StringVar(&c.pg, "pg", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server to make the throw-away databases on (dropped afterwards)")
	flag.StringVar(&c.pgbench, "pgbench", "/usr/bin/pgbench", "pgbench, for PostgreSQL's own limits")
	flag.StringVar(&dbs, "dbs", "postgres,sqlite", "databases to run on, in order")
	flag.StringVar(&only, "only", "", "scenarios to run, comma-separated (default all): "+strings.Join(scenarios, ","))
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "how long each throughput scenario (create, get, list, webhook) runs")
	flag.DurationVar(&c.baseline, "baseline", 5*time.Second, "how long each database baseline (pgbench script, SQLite loop) runs")
	flag.IntVar(&c.conns, "conns", 32, "concurrent connections of the load generator and of pgbench")
	flag.IntVar(&c.merchants, "merchants", 8, "merchants (one API key each) the create, get and sustain loads spread over")
	flag.IntVar(&c.listSeed, "list-seed", 10000, "transactions of the one merchant whose list is read (the list target is for 100,000)")
	flag.Float64Var(&c.webhookRate, "webhook-rate", 20, "payments per second settling during the webhook latency scenario")
	flag.IntVar(&c.drain, "drain", 10000, "webhook deliveries in the drain burst")
	flag.IntVar(&c.drainEPs, "drain-endpoints", 20, "webhook endpoints of the drain merchant: each settled payment queues one delivery per endpoint")
	flag.BoolVar(&c.loadHooks, "load-hooks", false, "give each load merchant (create, get, sustain) a webhook endpoint on the local receiver, so that every settlement also queues and sends a delivery, as a real merchant's does")
	flag.Float64Var(&c.sustainRate, "sustain-rate", 200, "creates per second of the sustained scenario")
	flag.DurationVar(&c.sustainFor, "sustain", 60*time.Second, "how long the sustained scenario creates payments")
	flag.DurationVar(&c.ttl, "ttl", 30*time.Second, "serve --pending-ttl: the PENDING window, which the sustained scenario waits out")
	flag.StringVar(&c.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.StringVar(&c.profileDir, "profile", "", "write the server's CPU profile of the create, get, list and drain scenarios to this folder (KIND-SCENARIO.pprof; read with go tool pprof)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work folder (server logs, SQLite files) and print where it is")
	flag.Parse()
	if c.profileDir != "" {
		if err := os.MkdirAll(c.profileDir, 0o755); err != nil {
			return c, fmt.Errorf("-profile: %w", err)
		}
	}
	c.dbs = strings.Split(dbs, ",")
	for _, d := range c.dbs {
		if d != "postgres" && d != "sqlite" {
			return c, fmt.Errorf("-dbs: unknown database %q (postgres, sqlite)", d)
		}
	}
	c.only = map[string]bool{}
	if only == "" {
		only = strings.Join(scenarios, ",")
	}
	for _, s := range strings.Split(only, ",") {
		if !slices.Contains(scenarios, s) {
			return c, fmt.Errorf("-only: unknown scenario %q (%s)", s, strings.Join(scenarios, ","))
		}
		c.only[s] = true
	}
	switch {
	case c.duration <= 0 || c.duration > 5*time.Minute, c.baseline <= 0 || c.baseline > 5*time.Minute:
		return c, errors.New("-duration and -baseline must be in (0, 5m]")
	case c.conns < 1 || c.conns > 90:
		return c, errors.New("-conns must be in [1, 90] (PostgreSQL allows 100 connections)")
	case c.merchants < 1 || c.merchants > 100:
		return c, errors.New("-merchants must be in [1, 100]")
	case c.drainEPs < 1 || c.drainEPs > 20:
		return c, errors.New("-drain-endpoints must be in [1, 20]: a merchant has at most 20 webhook endpoints")
	case c.listSeed < 1 || c.listSeed > 200_000, c.drain < 1 || c.drain > 100_000:
		return c, errors.New("-list-seed must be in [1, 200000] and -drain in [1, 100000]")
	case c.webhookRate <= 0 || c.webhookRate > 1000, c.sustainRate <= 0 || c.sustainRate > 1000:
		return c, errors.New("-webhook-rate and -sustain-rate must be in (0, 1000]")
	case c.sustainFor <= 0 || c.sustainFor > 10*time.Minute, c.ttl < time.Second || c.ttl > 5*time.Minute:
		return c, errors.New("-sustain must be in (0, 10m] and -ttl in [1s, 5m]")
	}
	return c, nil
}

func main() {
	c, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Hour) // bounded, whatever the flags
	defer cancel()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) (err error) {
	work, err := os.MkdirTemp("", "momopay-bench-")
	if err != nil {
		return err
	}
	var rep *report
	defer func() {
		switch {
		case rep != nil && rep.failed():
			// The server logs why it answered an error: keep them.
			fmt.Fprintln(os.Stderr, "work folder (server logs), kept because some requests failed:", work)
		case c.keep || err != nil:
			fmt.Fprintln(os.Stderr, "work folder (server logs):", work)
		default:
			os.RemoveAll(work)
		}
	}()
	built := ""
	if c.bin == "" {
		if c.bin, built, err = build(ctx, work); err != nil {
			return err
		}
	}
	var version struct{ Version, Commit string }
	if out, err := exec.CommandContext(ctx, c.bin, "version", "--json").Output(); err != nil || json.Unmarshal(out, &version) != nil {
		return fmt.Errorf("%s version --json: %v %s", c.bin, err, out)
	}
	rep = &report{Started: time.Now().UTC(), CPUs: runtime.NumCPU(), LoadBefore: loadavg(),
		Binary: c.bin, Version: strings.TrimSpace(version.Version + " " + version.Commit + " " + built), Conns: c.conns,
		Duration: c.duration.String(), ListSeed: c.listSeed}
	fmt.Printf("momopay %s, %d CPUs, load average %s, %d connections, %s per scenario\n",
		rep.Version, rep.CPUs, rep.LoadBefore, c.conns, c.duration)

	rc, err := startReceiver()
	if err != nil {
		return err
	}
	defer rc.close()
	var pg *pgServer
	if slices.Contains(c.dbs, "postgres") {
		if pg, err = openPG(ctx, c.pg); err != nil {
			return err
		}
		defer pg.admin.Close()
	}
	for _, kind := range c.dbs {
		if err := runOn(ctx, c, kind, pg, rc, work, rep); err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
	}
	rep.LoadAfter = loadavg()
	rep.print(os.Stdout)
	if c.jsonOut != "" {
		return rep.writeJSON(c.jsonOut)
	}
	return nil
}

// build compiles ./cmd/momopay of the module the command runs in, and
// says which commit that is (a development build reports none itself).
func build(ctx context.Context, work string) (bin, built string, err error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return "", "", errors.New("run from momopay's checkout, or pass -bin")
	}
	dir := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin = filepath.Join(work, "momopay")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/momopay")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build ./cmd/momopay: %w: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", dir, "describe", "--always", "--dirty").Output(); err == nil {
		built = "(built from " + strings.TrimSpace(string(out)) + ")"
	}
	return bin, built, nil
}

// runOn measures one database: its own limits, then the service on it.
func runOn(ctx context.Context, c config, kind string, pg *pgServer, rc *receiver, work string, rep *report) error {
	fmt.Printf("\n== %s\n", kind)
	var dbURL string
	if kind == "postgres" {
		if c.only["create"] || c.only["get"] {
			b, err := measurePG(ctx, pg, c.pgbench, c.conns, c.baseline, work)
			if err != nil {
				return err
			}
			rep.PG = &b
			fmt.Printf("pgbench (-c %d -j 2 -M prepared, synchronous_commit %s): %.0f durable one-row inserts/s, %.0f primary-key reads/s\n",
				c.conns, b.SynchronousCommit, b.InsertTPS, b.ReadTPS)
		}
		name := "momopay_bench_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
		var err error
		if dbURL, err = pg.createDB(ctx, name); err != nil {
			return err
		}
		defer pg.dropDB(name)
	} else {
		if c.only["create"] || c.only["get"] {
			b, err := measureSQLite(ctx, work, c.baseline)
			if err != nil {
				return fmt.Errorf("SQLite baseline: %w", err)
			}
			rep.SQLite = &b
			fmt.Printf("SQLite through modernc.org/sqlite, one connection: %.0f inserts/s (synchronous=NORMAL, as serve in sandbox mode; FULL, as in live mode: %.0f/s), %.0f primary-key reads/s\n",
				b.InsertPerSec, b.InsertFullPerSec, b.ReadPerSec)
		}
		dbURL = filepath.Join(work, "momopay.db")
	}

	// Set up with the CLI before the server starts: merchants, keys and
	// webhook endpoints on the receiver (by path: /KIND-hook/, /KIND-drain/N).
	var migrated map[string]any
	if err := cli(ctx, c.bin, dbURL, "", &migrated, "migrate"); err != nil {
		return err
	}
	load := make([]merchant, c.merchants)
	for i := range load {
		var err error
		if load[i], err = newMerchant(ctx, c.bin, dbURL, fmt.Sprintf("load-%d", i)); err != nil {
			return err
		}
		if c.loadHooks {
			if err := addEndpoint(ctx, c.bin, dbURL, load[i], rc.url+"/"+kind+"-load/"); err != nil {
				return err
			}
		}
	}
	var lister, hook, drain merchant
	var err error
	if c.only["list"] {
		if lister, err = newMerchant(ctx, c.bin, dbURL, "list"); err != nil {
			return err
		}
	}
	if c.only["webhook"] {
		if hook, err = newMerchant(ctx, c.bin, dbURL, "hook"); err != nil {
			return err
		}
		if err := addEndpoint(ctx, c.bin, dbURL, hook, rc.url+"/"+kind+"-hook/"); err != nil {
			return err
		}
	}
	if c.only["drain"] {
		if drain, err = newMerchant(ctx, c.bin, dbURL, "drain"); err != nil {
			return err
		}
		for i := range c.drainEPs {
			if err := addEndpoint(ctx, c.bin, dbURL, drain, fmt.Sprintf("%s/%s-drain/%d", rc.url, kind, i)); err != nil {
				return err
			}
		}
	}

	svc, err := startService(ctx, c.bin, dbURL, c.ttl, filepath.Join(work, kind+"-serve.log"), c.profileDir != "")
	if err != nil {
		return err
	}
	// profile records the server's CPU while a scenario runs, with -profile.
	profile := func(scenario string, d time.Duration) (wait func()) {
		if c.profileDir == "" {
			return func() {}
		}
		path := filepath.Join(c.profileDir, kind+"-"+scenario+".pprof")
		w := svc.profileCPU(ctx, path, d)
		return func() {
			if err := w(); err != nil {
				fmt.Println("  profile:", err)
				return
			}
			fmt.Println("  CPU profile:", path)
		}
	}
	defer svc.stop()
	a, err := newAPI(svc.base, c.conns)
	if err != nil {
		return err
	}
	defer a.close()
	mem := func(after string) {
		m, err := svc.memory()
		if err != nil {
			fmt.Println("  memory:", err)
			return
		}
		rep.Memory = append(rep.Memory, memSample{DB: kind, After: after, RSSMB: mb(m.RSS), HWMMB: mb(m.HWM)})
		fmt.Printf("  server memory: VmRSS %.0f MB, VmHWM %.0f MB\n", mb(m.RSS), mb(m.HWM))
	}
	mem("start")

	var made []owned
	if c.only["create"] {
		done := profile("create", c.duration)
		s, ids := createLoad(ctx, a, load, bothOperators, c.conns, c.duration, 0, "create")
		done()
		made = ids
		r := rep.add(kind, "create", s.rate(), s.lat, s.ok, s.errs, s.firstErr)
		fmt.Printf("create: %.0f/s, p50 %s, p99 %s%s\n", r.Rate, ms(r.P50), ms(r.P99), errSummary(s))
		mem("create")
		quiet(ctx)
	}
	if c.only["get"] {
		if len(made) == 0 {
			s, ids := createLoad(ctx, a, load, bothOperators, c.conns, time.Minute, 2000, "get-seed")
			if len(ids) == 0 {
				return fmt.Errorf("no payment to read:%s", errSummary(s))
			}
			made = ids
			quiet(ctx)
		}
		done := profile("get", c.duration)
		s := getLoad(ctx, a, made, c.conns, c.duration)
		done()
		r := rep.add(kind, "get", s.rate(), s.lat, s.ok, s.errs, s.firstErr)
		fmt.Printf("get (over %d transactions): %.0f/s, p50 %s, p99 %s%s\n", len(made), r.Rate, ms(r.P50), ms(r.P99), errSummary(s))
		mem("get")
	}
	if c.only["list"] {
		t0 := time.Now()
		s := seedList(ctx, a, lister, c.conns, c.listSeed, "list")
		fmt.Printf("list: seeded %d transactions in %s (%.0f/s)%s\n", s.ok, time.Since(t0).Round(time.Second), s.rate(), errSummary(s))
		if s.ok == 0 {
			return errors.New("list: no transaction seeded")
		}
		rep.ListSeeded = s.ok
		if left := waitSettled(ctx, a, lister, c.ttl+30*time.Second); left > 0 {
			fmt.Printf("list: %d transactions still PENDING; measuring anyway\n", left)
		}
		done := profile("list", c.duration)
		all, deep, totals, err := listLoad(ctx, a, lister, c.conns, c.duration)
		done()
		if err != nil {
			return err
		}
		r := rep.add(kind, "list", all.rate(), all.lat, all.ok, all.errs, all.firstErr)
		rd := rep.add(kind, "list, back-half pages", 0, deep, len(deep), 0, "")
		fmt.Printf("list (totals %v): %.0f/s, p50 %s, p99 %s; back-half pages p50 %s, p99 %s%s\n",
			totals, r.Rate, ms(r.P50), ms(r.P99), ms(rd.P50), ms(rd.P99), errSummary(all))
		mem("list")
	}
	if c.only["webhook"] {
		lat, created, failed, err := webhookLatency(ctx, a, rc, hook, c.webhookRate, c.duration, kind+"-hook")
		note := ""
		if err != nil {
			note = err.Error()
		}
		if created > len(lat) {
			note = strings.TrimSpace(fmt.Sprintf("%d of %d deliveries arrived; %s", len(lat), created, note))
		}
		r := rep.add(kind, "webhook", float64(len(lat))/c.duration.Seconds(), lat, len(lat), failed+created-len(lat), note)
		fmt.Printf("state change -> webhook received (%d payments at %.0f/s, %d deliveries): p50 %s, p95 %s, p99 %s %s\n",
			created, c.webhookRate, len(lat), ms(r.P50), ms(r.P95), ms(r.P99), note)
		mem("webhook")
		quiet(ctx)
	}
	if c.only["drain"] {
		// The drain's profile covers its first 3 s after the release.
		d, err := webhookDrain(ctx, a, rc, drain, c.drainEPs, c.drain, c.conns, kind+"-drain",
			func() func() { return profile("drain", 3*time.Second) })
		if err != nil {
			return err
		}
		var notes []string
		if d.received < d.expected {
			notes = append(notes, fmt.Sprintf("%d of %d deliveries arrived", d.received, d.expected))
		}
		if !d.queued {
			notes = append(notes, fmt.Sprintf("not every payment had settled after %s: part of the backlog was queued during the drain", drainHold))
		}
		rep.add(kind, "drain", d.rate(), nil, d.received, d.expected-d.received, strings.Join(notes, "; "))
		fmt.Printf("webhook drain: %d of %d deliveries in %s from the release of the backlog to the last: %.0f/s\n",
			d.received, d.expected, d.window.Round(time.Millisecond), d.rate())
		mem("drain")
		quiet(ctx)
	}
	if c.only["sustain"] {
		fmt.Printf("sustain: %.0f creates/s for %s, then the %s PENDING window and a read-back\n", c.sustainRate, c.sustainFor, c.ttl)
		s, err := sustain(ctx, a, load, c.sustainRate, c.sustainFor, c.ttl, "sustain")
		if err != nil {
			return err
		}
		rep.addSustain(kind, s, c)
		mem("sustain")
	}
	return nil
}

// quiet waits for the payments of the scenario just run to settle (the
// sandbox payers answer within about 4 s), so that their callbacks and
// polls do not weigh on the next scenario's figures.
func quiet(ctx context.Context) {
	select {
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
}

// loadavg is /proc/loadavg's three load averages.
func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
