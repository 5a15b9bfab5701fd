package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
)

// settings are serve's flags once parsed: each value, and where it came
// from (fromDefault, fromEnv, fromBadEnv or fromFlag).
type settings struct {
	fs   *flag.FlagSet
	from map[string]string
	// getenv reads variables that are not flags (the operators' credentials).
	getenv Env
}

// has says whether serve has the flag at all (checks of flags added on
// other branches must not assume them).
func (s settings) has(name string) bool { return s.fs.Lookup(name) != nil }

func (s settings) str(name string) string {
	if f := s.fs.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// get is the typed value of a flag (time.Duration, float64, int, ...), or
// nil when serve has no such flag.
func (s settings) get(name string) any {
	f := s.fs.Lookup(name)
	if f == nil {
		return nil
	}
	if g, ok := f.Value.(flag.Getter); ok {
		return g.Get()
	}
	return f.Value.String()
}

// given says whether the flag was set on the command line or by its
// variable, rather than left at its default.
func (s settings) given(name string) bool {
	from := s.from[name]
	return from == fromFlag || from == fromEnv
}

// configCheck looks at serve's settings and returns every problem it finds,
// each a sentence naming the flag and its variable. A static check needs
// nothing outside the process, and serve runs it before it starts; one that
// reaches out (to the database, to Redis) runs only in "momopay config
// check": serve meets those problems itself, with its own messages, when it
// connects.
//
// A package-level list, so that a check of a new setting plugs in from the
// file that adds the setting:
//
//	func init() { configChecks = append(configChecks, configCheck{run: checkMine}) }
//
// A check with now set looks at this machine at this moment rather than at
// the settings (a port taken, a SQLite file served): what it finds is a
// note, not a problem, because the usual case is the very serve about to
// be restarted with the settings checked, and the exit status stays 0.
type configCheck struct {
	reach bool
	now   bool
	run   func(ctx context.Context, s settings) []string
}

var configChecks = []configCheck{
	{run: checkMode},
	{run: checkAddr},
	{run: checkAdminAddr},
	{run: checkPendingTTL},
	{run: checkRateLimit},
	{run: checkShutdownGrace},
	{run: checkRedisURL},
	{run: checkTrustedProxies},
	{reach: true, run: checkLiveMode},
	{reach: true, now: true, run: checkListeners},
	{reach: true, now: true, run: checkSQLiteServed},
	{reach: true, run: checkDatabase},
	{reach: true, run: checkRedisReachable},
}

// checkSettings runs the static checks on serve's parsed flags and returns
// every problem at once.
func checkSettings(ctx context.Context, fs *flag.FlagSet) error {
	s := settings{fs: fs, from: map[string]string{}}
	fs.Visit(func(f *flag.Flag) { s.from[f.Name] = fromFlag })
	var problems []string
	for _, check := range configChecks {
		if !check.reach {
			problems = append(problems, check.run(ctx, s)...)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New("serve: " + strings.Join(oneLineEach(problems), "\nserve: "))
}

func checkTrustedProxies(_ context.Context, s settings) []string {
	if _, err := api.ParseTrustedProxies(s.str("trusted-proxies")); err != nil {
		return []string{fmt.Sprintf("--trusted-proxies: %v (env MOMOPAY_TRUSTED_PROXIES)", err)}
	}
	return nil
}

func checkMode(_ context.Context, s settings) []string {
	mode := s.str("mode")
	switch {
	case mode != ModeSandbox && mode != ModeLive:
		return []string{fmt.Sprintf("--mode %q is not a mode: use sandbox or live (env MOMOPAY_MODE)", mode)}
	case mode == ModeLive && s.given("pending-ttl"):
		return []string{fmt.Sprintf("--pending-ttl (MOMOPAY_PENDING_TTL) is for sandbox mode only: live payments stay PENDING %s", payment.DefaultPendingTTL)}
	}
	return nil
}

// checkLiveMode asks Open's own validation whether live mode can start
// with these settings (serve meets the same answer when it opens). A
// setting that live mode needs belongs in the Config built here, or in a
// check of its own.
func checkLiveMode(_ context.Context, s settings) []string {
	if s.str("mode") != ModeLive {
		return nil
	}
	cfg := Config{
		Mode: ModeLive, DatabaseURL: s.str("db"), Getenv: s.getenv, RequireOperator: true,
		SessionSecret: []byte(s.getenv("MOMOPAY_SESSION_SECRET")), Logger: slog.New(slog.DiscardHandler),
	}
	err := cfg.defaults()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	var problems []string
	for _, e := range errs {
		problems = append(problems, fmt.Sprintf("--mode live: %v", e))
	}
	return problems
}
func checkAddr(_ context.Context, s settings) []string {
	if addr := s.str("addr"); !listenAddress(addr) {
		return []string{fmt.Sprintf("--addr %q is not a listen address: give HOST:PORT, e.g. 127.0.0.1:8080 or :8080 (env MOMOPAY_ADDR)", addr)}
	}
	return nil
}

func checkAdminAddr(_ context.Context, s settings) []string {
	if addr := s.str("admin-addr"); addr != "off" && !listenAddress(addr) {
		return []string{fmt.Sprintf("--admin-addr %q is not a listen address: give HOST:PORT, e.g. 127.0.0.1:9090, or off (env MOMOPAY_ADMIN_ADDR)", addr)}
	}
	return nil
}

// listenAddress reports whether addr is HOST:PORT with a port from 0 to
// 65535 (0: any free port).
func listenAddress(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}

func checkPendingTTL(_ context.Context, s settings) []string {
	ttl, _ := s.get("pending-ttl").(time.Duration)
	if ttl < minPendingTTL || ttl > payment.DefaultPendingTTL {
		return []string{fmt.Sprintf("--pending-ttl %s is out of range: give a duration from %s to %s, e.g. 30s (env MOMOPAY_PENDING_TTL)", ttl, minPendingTTL, payment.DefaultPendingTTL)}
	}
	return nil
}

func checkRateLimit(_ context.Context, s settings) []string {
	limit, _ := s.get("rate-limit").(float64)
	burst, _ := s.get("rate-burst").(int)
	var problems []string
	if limit < 0 || math.IsNaN(limit) || math.IsInf(limit, 0) {
		problems = append(problems, fmt.Sprintf("--rate-limit %v is out of range: give requests per second per merchant, 0 or more; 0 turns the limit off (env MOMOPAY_RATE_LIMIT)", limit))
	}
	// A bad --rate-limit counts as on: each problem is named on its own.
	if burst < 0 || (limit != 0 && burst < 1) {
		problems = append(problems, fmt.Sprintf("--rate-burst %d is out of range: give at least 1; 0 only goes with --rate-limit 0, which turns the limit off (env MOMOPAY_RATE_BURST)", burst))
	}
	return problems
}

// maxShutdownGrace bounds --shutdown-grace: a stop that waits longer than
// this is one that a supervisor (systemd's TimeoutStopSec) kills anyway.
const maxShutdownGrace = 10 * time.Minute

func checkShutdownGrace(_ context.Context, s settings) []string {
	if !s.has("shutdown-grace") {
		return nil
	}
	grace, _ := s.get("shutdown-grace").(time.Duration)
	if grace < time.Second || grace > maxShutdownGrace {
		return []string{fmt.Sprintf("--shutdown-grace %s is out of range: give a duration from 1s to %s, e.g. 25s (env MOMOPAY_SHUTDOWN_GRACE)", grace, maxShutdownGrace)}
	}
	return nil
}

// checkListeners listens on serve's addresses and lets go at once: a port
// another program (or a running serve) holds, or an address this machine
// does not have, is what serve would meet first.
func checkListeners(_ context.Context, s settings) []string {
	var problems []string
	for _, name := range []string{"addr", "admin-addr"} {
		addr := s.str(name)
		if !s.has(name) || addr == "off" || !listenAddress(addr) {
			continue // off, or named by checkAddr or checkAdminAddr
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--%s %s is taken now (%v): serve can listen there once what holds it stops (env %s)", name, addr, errors.Unwrap(err), envOf(name)))
			continue
		}
		ln.Close()
	}
	return problems
}

// checkDatabase connects to the database as serve would, without creating
// anything: a SQLite file that does not exist yet is fine when its folder
// does (serve creates it) and serve can write there.
func checkDatabase(ctx context.Context, s settings) []string {
	url := s.str("db")
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	db, err := store.OpenExisting(ctx, url)
	var missing *store.NoDatabaseError
	if errors.As(err, &missing) {
		dir := filepath.Dir(missing.Path)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return []string{fmt.Sprintf("--db: the folder %s does not exist, so serve cannot create the SQLite database there (env MOMOPAY_DATABASE_URL)", dir)}
		}
		return sqliteFolderProblems(dir)
	}
	if err != nil {
		return []string{fmt.Sprintf("--db: %v (env MOMOPAY_DATABASE_URL)", err)}
	}
	// A database the other mode has served is refused by serve; any other
	// error here (a schema serve has yet to migrate) serve meets itself.
	refusal := db.ModeRefusal(ctx, s.str("mode") == ModeLive)
	db.Close()
	if errors.Is(refusal, store.ErrServedLive) || errors.Is(refusal, store.ErrServedSandbox) {
		return []string{fmt.Sprintf("--db: %v (env MOMOPAY_DATABASE_URL)", refusal)}
	}
	if abs, ok := sqliteFile(url); ok {
		return sqliteFolderProblems(filepath.Dir(abs))
	}
	return nil
}

// checkSQLiteServed says whether a serve holds the SQLite file now: a
// second one would be refused until it stops.
func checkSQLiteServed(_ context.Context, s settings) []string {
	abs, ok := sqliteFile(s.str("db"))
	if !ok {
		return nil
	}
	if lockFile, held := sqliteServeHeld(abs); held {
		return []string{fmt.Sprintf("--db: a momopay serve is serving the SQLite database %s now (it holds %s): another serve on that file is refused until it stops (env MOMOPAY_DATABASE_URL)", abs, lockFile)}
	}
	return nil
}

// sqliteFolderProblems says whether serve could write in the SQLite
// database's folder: it creates the database there, and its journal
// (-wal, -shm) and lock files beside it, so a read-only folder fails at
// start or at the first write. The probe is a file created and removed.
func sqliteFolderProblems(dir string) []string {
	f, err := os.CreateTemp(dir, ".momopay-config-check-*")
	if err != nil {
		return []string{fmt.Sprintf("--db: serve cannot write in the folder %s, where SQLite keeps the database, its journal and its lock files (%v) (env MOMOPAY_DATABASE_URL)", dir, errors.Unwrap(err))}
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// oneLineEach folds each message onto one line: a driver's error may hold
// newlines and tabs (pgx lists each address it tried), and config check
// promises a line per problem, on stdout and in its error for logs.
func oneLineEach(msgs []string) []string {
	for i, m := range msgs {
		msgs[i] = lineBreak.ReplaceAllString(m, " ")
	}
	return msgs
}

var lineBreak = regexp.MustCompile(`[ \t]*[\r\n]+[ \t]*`)

// configCheck is "momopay config check": it reads serve's flags the way
// serve does (the same flag set, so flags added to serve appear here),
// prints each setting with its source, runs every check and exits non-zero
// naming all the problems.
func (c *cli) configCheck(ctx context.Context, args []string) error {
	jsonValue, jsonFrom := c.getenv(envOf("json")), envOf("json")
	var serveArgs []string
	for _, a := range args {
		if v, ok := jsonArg(a); ok {
			jsonValue, jsonFrom = v, "--json"
			continue
		}
		switch a {
		case "-h", "-help", "--help":
			return c.configCheckHelp(ctx)
		default:
			serveArgs = append(serveArgs, a)
		}
	}
	asJSON, err := parseJSONSetting(jsonFrom, jsonValue)
	if err != nil {
		return err
	}
	s, bad, err := c.serveSettings(ctx, serveArgs)
	if e, ok := errors.AsType[*argCountError](err); ok {
		// Named for the command typed, not for serve, whose flags it read.
		return &argCountError{cmd: "config check", want: positionalNames("config check"), got: e.got}
	}
	if err != nil {
		return fmt.Errorf("config check: %v (it takes the flags of serve: run \"momopay config check -h\")", err)
	}
	problems := make([]string, 0, len(bad))
	for _, e := range bad {
		problems = append(problems, e.Error())
	}
	notes := []string{}
	for _, check := range configChecks {
		if check.now {
			notes = append(notes, check.run(ctx, s)...)
		} else {
			problems = append(problems, check.run(ctx, s)...)
		}
	}
	problems, notes = oneLineEach(problems), oneLineEach(notes)
	rows := settingRows(s)
	if asJSON {
		if err := c.printJSON(map[string]any{"settings": rows, "problems": problems, "notes": notes, "ok": len(problems) == 0}); err != nil {
			return err
		}
	} else {
		c.table("FLAG\tVARIABLE\tSOURCE\tVALUE", func(w io.Writer) {
			for _, r := range rows {
				fmt.Fprintf(w, "--%s\t%s\t%s\t%s\n", r.Flag, r.Env, r.Source, r.Value)
			}
		})
		switch {
		case len(problems) == 0 && len(notes) == 0:
			fmt.Fprintln(c.stdout, "\nno problems: serve can start with these settings")
		case len(problems) == 0:
			fmt.Fprintln(c.stdout, "\nno problems in these settings")
		default:
			fmt.Fprintf(c.stdout, "\n%s:\n", plural(len(problems), "problem"))
			for _, p := range problems {
				fmt.Fprintf(c.stdout, "  - %s\n", p)
			}
		}
		if len(notes) > 0 {
			fmt.Fprintln(c.stdout, "\nbut serve could not start here now (fine when it is the serve these settings are for, before its restart):")
			for _, n := range notes {
				fmt.Fprintf(c.stdout, "  - %s\n", n)
			}
		}
	}
	if len(problems) > 0 {
		// One line each on stderr (main prints the error), for logs.
		return fmt.Errorf("config check: %s\nconfig check: %s", plural(len(problems), "problem"), strings.Join(problems, "\nconfig check: "))
	}
	return nil
}

// jsonArg reads config check's own --json flag, which serve's flag set
// does not have: ok is false for any other argument.
func jsonArg(arg string) (value string, ok bool) {
	for _, name := range []string{"--json", "-json"} {
		if arg == name {
			return "true", true
		}
		if v, ok := strings.CutPrefix(arg, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// parseJSONSetting is the value of --json, or of its variable (from),
// refused as every command refuses a value that does not parse: output in
// a format the caller did not ask for would be read wrong.
func parseJSONSetting(from, value string) (bool, error) {
	if value == "" {
		return false, nil
	}
	asJSON, err := strconv.ParseBool(value)
	if err != nil {
		return false, fmt.Errorf("config check: %s=%q is not a valid value for --json: give true or false", from, value)
	}
	return asJSON, nil
}

// serveSettings parses args as serve's flags (with the environment) and
// returns them without starting anything, with the variables that did not
// parse.
func (c *cli) serveSettings(ctx context.Context, args []string) (settings, []error, error) {
	var s settings
	var bad []error
	inspecting := *c
	inspecting.inspect = func(fs *flag.FlagSet, from map[string]string, errs []error) {
		s, bad = settings{fs: fs, from: from, getenv: c.getenv}, errs
	}
	err := lookup("serve").run(&inspecting, ctx, args)
	if !errors.Is(err, errInspected) {
		if err == nil {
			err = errors.New("serve did not parse its flags")
		}
		return settings{}, nil, err
	}
	return s, bad, nil
}

func (c *cli) configCheckHelp(ctx context.Context) error {
	s, _, err := c.serveSettings(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "usage: momopay %s\n\n%s\n\nflags (those of serve):\n", syntaxOf("config check"), lookup("config check").summary)
	s.fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, "(env ") {
			f.Usage += " (env " + envOf(f.Name) + ")"
		}
	})
	s.fs.SetOutput(c.stdout)
	s.fs.PrintDefaults()
	s.fs.SetOutput(io.Discard)
	fmt.Fprintf(c.stdout, "  -json\n    \tprint one JSON object on stdout (env %s)\n", envOf("json"))
	return errHelpShown
}

// settingRow is one setting as config check prints it.
type settingRow struct {
	Flag   string `json:"flag"`
	Env    string `json:"env"`
	Source string `json:"source"`
	Value  string `json:"value"`
}

func settingRows(s settings) []settingRow {
	var rows []settingRow
	s.fs.VisitAll(func(f *flag.Flag) {
		rows = append(rows, settingRow{Flag: f.Name, Env: envOf(f.Name), Source: s.from[f.Name], Value: masked(f.Name, f.Value.String())})
	})
	return rows
}

// secretWords mark a flag whose whole value is a secret: it is shown only
// as set or not.
var secretWords = []string{"secret", "password", "token", "key", "credential"}

// masked is a setting's value fit to print: a secret flag's value hidden
// whole, and the password of any URL or connection string taken out.
func masked(name, value string) string {
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			if value == "" {
				return ""
			}
			return "(set, hidden)"
		}
	}
	return store.Redact(value)
}
