package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// Env reads configuration from the environment; tests pass a map lookup.
type Env func(string) string

// Run is the whole program: it parses args (without the program name) and
// runs one command. It never calls os.Exit, so tests can run it in-process.
// Help goes to stdout and is no error; an error is returned, not printed,
// so that main prints it once.
func Run(ctx context.Context, args []string, getenv Env, stdin io.Reader, stdout, stderr io.Writer) error {
	c := &cli{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	err := c.run(ctx, args)
	if errors.Is(err, errHelpShown) {
		return nil
	}
	return err
}

func (c *cli) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usage())
		return errors.New(`no command given: run "momopay help" for the commands`)
	}
	name, rest := args[0], args[1:]
	if isHelp(name) {
		return c.help(rest)
	}
	if subs := subcommandsOf(name); subs != nil {
		if len(rest) == 0 {
			return fmt.Errorf("%s needs a subcommand: %s (run \"momopay %s -h\")", name, strings.Join(subs, ", "), name)
		}
		if isHelp(rest[0]) {
			return c.help([]string{name})
		}
		name, rest = name+" "+rest[0], rest[1:]
	}
	cmd := lookup(name)
	if cmd == nil {
		return fmt.Errorf("unknown command %q: run \"momopay help\" for the commands", name)
	}
	return cmd.run(c, ctx, rest)
}

// isHelp recognises every way people ask for help.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// help prints the whole usage, a group's commands (momopay help apikey) or
// one command's syntax and flags (momopay help apikey revoke).
func (c *cli) help(topic []string) error {
	if len(topic) == 0 {
		fmt.Fprint(c.stdout, usage())
		return errHelpShown
	}
	name := strings.Join(topic, " ")
	if subs := subcommandsOf(name); subs != nil {
		fmt.Fprintf(c.stdout, "usage:\n")
		for _, sub := range subs {
			fmt.Fprintf(c.stdout, "  momopay %s\n", lookup(name+" "+sub).syntax)
		}
		fmt.Fprintf(c.stdout, "\nRun \"momopay %s SUBCOMMAND -h\" for a subcommand's flags.\n", name)
		return errHelpShown
	}
	cmd := lookup(name)
	if cmd == nil {
		return fmt.Errorf("no help for %q: it is not a command; run \"momopay help\" for the commands", name)
	}
	// The command itself prints its syntax and flags on -h.
	return cmd.run(c, context.Background(), []string{"-h"})
}

// command is one line of the command table.
type command struct {
	name string
	// syntax is the full command line after "momopay": required flags,
	// positional arguments, then the optional flags.
	syntax  string
	summary string
	run     func(c *cli, ctx context.Context, args []string) error
}

// commands lists every command in the order help shows them. Each entry
// parses its own flags (c.flags), so "-h" works before any database opens.
// It is filled in init: the commands' help refers back to the table.
var commands []command

func init() {
	commands = []command{
		{"serve", "serve [--addr HOST:PORT] [--mode sandbox|live] [--pending-ttl DURATION] [--rate-limit N] [--rate-burst N] [--redis-url URL] [--shutdown-grace DURATION] [--admin-addr HOST:PORT|off] [--log-format json|text] [--log-level LEVEL] [--trusted-proxies LIST] [--db URL]",
			"Run the API, the operators' callbacks and the background workers until SIGINT or SIGTERM. Creates and migrates the database if needed.", (*cli).serve},
		{"migrate", "migrate [--db URL] [--json]",
			"Create the database if needed and apply the schema migrations it lacks.", (*cli).migrate},
		{"backup", "backup --to FILE [--db URL] [--json]",
			"Copy a SQLite database, consistently, while it serves; the file must not exist yet. For PostgreSQL use pg_dump.", (*cli).backup},
		{"merchant create", "merchant create --name NAME --email EMAIL --password-stdin [--db URL] [--json]",
			"Add a merchant; its dashboard password is read from standard input.", (*cli).merchantCreate},
		{"merchant list", "merchant list [--db URL] [--json]",
			"List every merchant.", (*cli).merchantList},
		{"merchant auto-refund", "merchant auto-refund --merchant MERCHANT_ID on|off [--db URL] [--json]",
			"Refund automatically a SUCCESS the operator reports after the payment ended TIMEOUT (off by default).", (*cli).merchantAutoRefund},
		{"apikey create", "apikey create --merchant MERCHANT_ID [--db URL] [--json]",
			"Make an API key for a merchant; the key is shown only here.", (*cli).apikeyCreate},
		{"apikey list", "apikey list --merchant MERCHANT_ID [--db URL] [--json]",
			"List a merchant's API keys (never the keys themselves).", (*cli).apikeyList},
		{"apikey revoke", "apikey revoke --merchant MERCHANT_ID KEY_ID [--db URL] [--json]",
			"Revoke an API key: requests made with it are refused from then on.", (*cli).apikeyRevoke},
		{"sandbox confirm", "sandbox confirm TRANSACTION_ID [--db URL] [--json]",
			"Play the payer of a sandbox payment: accept it (SUCCESS).", func(c *cli, ctx context.Context, a []string) error {
				return c.sandboxAnswer(ctx, "sandbox confirm", a, payment.StatusSuccess)
			}},
		{"sandbox refuse", "sandbox refuse TRANSACTION_ID [--db URL] [--json]",
			"Play the payer of a sandbox payment: refuse it (FAILED).", func(c *cli, ctx context.Context, a []string) error {
				return c.sandboxAnswer(ctx, "sandbox refuse", a, payment.StatusFailed)
			}},
		{"transaction show", "transaction show TRANSACTION_ID [--db URL] [--json]",
			"Show a transaction with what the operator said (its reference, code, failure reason) and its refunds.", (*cli).transactionShow},
		{"refund", "refund TRANSACTION_ID [--by NAME] [--db URL] [--json]",
			"Give a paid transaction's money back to the payer, in full, through its operator; recorded with who asked.", (*cli).refund},
		{"reconcile list", "reconcile list [--open] [--merchant MERCHANT_ID] [--db URL] [--json]",
			"List late operator outcomes that contradict a final state, to reconcile by hand, oldest first, each with whether it is resolved.", (*cli).reconcileList},
		{"webhook create", "webhook create --merchant MERCHANT_ID --url URL [--db URL] [--json]",
			"Register a webhook endpoint; its signing secret is shown only here.", (*cli).webhookCreate},
		{"webhook list", "webhook list --merchant MERCHANT_ID [--db URL] [--json]",
			"List a merchant's webhook endpoints (never their secrets).", (*cli).webhookList},
		{"webhook enable", "webhook enable --merchant MERCHANT_ID ENDPOINT_ID [--db URL] [--json]",
			"Send events to a disabled endpoint again (re-send what it missed with webhook resend).", (*cli).webhookEnable},
		{"webhook disable", "webhook disable --merchant MERCHANT_ID ENDPOINT_ID [--db URL] [--json]",
			"Stop sending events to an endpoint.", (*cli).webhookDisable},
		{"webhook delete", "webhook delete --merchant MERCHANT_ID ENDPOINT_ID [--db URL] [--json]",
			"Delete an endpoint.", (*cli).webhookDelete},
		{"webhook deliveries", "webhook deliveries --merchant MERCHANT_ID [--limit N] [--db URL] [--json]",
			"Show recent deliveries, newest first, each with every attempt.", (*cli).webhookDeliveries},
		{"webhook resend", "webhook resend --merchant MERCHANT_ID DELIVERY_ID [--db URL] [--json]",
			"Attempt a pending or undelivered delivery once more, now; a pending one keeps its automatic schedule.", (*cli).webhookResend},
		{"webhook test", "webhook test --merchant MERCHANT_ID ENDPOINT_ID [--db URL] [--json]",
			"Send a transaction.test event to an endpoint, once, and wait for its answer.", (*cli).webhookTest},
		{"webhook prune", "webhook prune --days N [--merchant MERCHANT_ID] [--dry-run] [--db URL] [--json]",
			"Delete the history of deliveries that are over (delivered or undelivered) and older than N days, with their attempts; pending ones are kept. For a cron job.", (*cli).webhookPrune},
		{"config check", "config check [SERVE FLAGS] [--json]",
			"Print the settings serve would run with (secrets hidden) and where each comes from, check them (the database and Redis reachable), and exit 1 naming every problem.", (*cli).configCheck},
		{"version", "version [--json]",
			"Print the version, commit and build date.", (*cli).version},
	}
	commands = append(commands, userCommands...)
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// subcommandsOf returns the subcommands of a group (merchant, apikey, ...)
// in table order, or nil when name is not a group.
func subcommandsOf(name string) []string {
	var subs []string
	for _, cmd := range commands {
		if group, sub, ok := strings.Cut(cmd.name, " "); ok && group == name {
			subs = append(subs, sub)
		}
	}
	return subs
}

func usage() string {
	var b strings.Builder
	b.WriteString("momopay is a Mobile Money payment service for merchants in Chad (Airtel, Moov; XAF).\n\nUsage:\n")
	for _, cmd := range commands {
		fmt.Fprintf(&b, "  momopay %s\n", cmd.syntax)
	}
	b.WriteString(`  momopay help [COMMAND [SUBCOMMAND]]

--db is a SQLite file path (default momopay.db), sqlite:PATH, a PostgreSQL
URL (postgres://USER@HOST:5432/DB) or key=value string ("host=HOST
user=USER dbname=DB"); env MOMOPAY_DATABASE_URL. Only serve and migrate
create a database. Flags may come before or after the arguments; --json
prints one JSON object on stdout. Every command runs in the mode of --mode
(env MOMOPAY_MODE) like serve: webhook URLs follow it (sandbox allows http
and loopback URLs, not private or link-local ones), and a database that has
served live is refused in sandbox mode.

Every flag has an environment variable: MOMOPAY_ and its name in capitals
(--shutdown-grace: MOMOPAY_SHUTDOWN_GRACE), listed by "momopay COMMAND -h";
"momopay config check" shows what serve would run with.

Run "momopay COMMAND -h" for a command's flags.
`)
	return b.String()
}

type cli struct {
	getenv Env
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// inspect, when set, gets a command's parsed flags, where each value
	// came from and the bad variables, and the command stops there
	// (config_cli.go).
	inspect func(fs *flag.FlagSet, from map[string]string, bad []error)
	// mode is the command's --mode (flags), which open runs in.
	mode *string
}

// open wires the app for an administrative command: no workers, quiet
// logs, the mode of --mode or MOMOPAY_MODE as for serve (the mode decides,
// for one, which webhook URLs are accepted), and a database that must
// exist.
func (c *cli) open(ctx context.Context, dbURL string) (*App, error) {
	mode := ModeSandbox
	if c.mode != nil {
		mode = *c.mode
	}
	if mode != ModeSandbox && mode != ModeLive {
		return nil, fmt.Errorf("--mode %q is not a mode: use sandbox or live (env MOMOPAY_MODE)", mode)
	}
	return Open(ctx, Config{
		DatabaseURL: dbURL, Mode: mode, ExistingDatabase: true,
		Logger: c.quietLogger(), Getenv: c.getenv, SessionSecret: []byte(c.getenv("MOMOPAY_SESSION_SECRET")),
		Listeners: c.serverListeners(),
	})
}

// serverListeners are the addresses momopay serve listens on as far as a
// command can tell: MOMOPAY_ADDR and MOMOPAY_ADMIN_ADDR, or their
// defaults. "webhook test" and "webhook resend" send from this process,
// and must no more reach the server's own ports (its admin listener's
// pprof, say) than the server's deliveries do; a serve started with other
// --addr flags is out of a command's sight, and the docs say so.
func (c *cli) serverListeners() []netip.AddrPort {
	var out []netip.AddrPort
	for _, addr := range []string{or(c.getenv("MOMOPAY_ADDR"), defaultAddr), or(c.getenv("MOMOPAY_ADMIN_ADDR"), defaultAdminAddr)} {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue // "off", or not an address: serve refuses it
		}
		if p, err := strconv.ParseUint(port, 10, 16); err == nil && p > 0 {
			// The guard goes by port, on loopback and on the machine's
			// own addresses, so the host part does not matter.
			out = append(out, netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(p)))
		}
	}
	return out
}

// quietLogger logs only warnings and errors, on stderr: an administrative
// command's own output is its result.
func (c *cli) quietLogger() *slog.Logger {
	// The format follows serve's rule (MOMOPAY_LOG_FORMAT, else JSON
	// unless stderr is a terminal), so that a script's or a unit's log
	// collector reads both alike; a bad format is serve's to refuse.
	log, err := NewLogger(c.stderr, c.getenv("MOMOPAY_LOG_FORMAT"), "warn")
	if err != nil {
		log, _ = NewLogger(c.stderr, "", "warn")
	}
	return log
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// printJSON prints v as indented JSON, with every time field ("at",
// "…_at") in the API's fixed-width form (six fractional digits, UTC):
// encoding/json writes a time.Time with its trailing zeros cut. <, > and
// & are written as they are, as the API writes them.
func (c *cli) printJSON(v any) error {
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := timeField.ReplaceAllFunc(raw.Bytes(), func(m []byte) []byte {
		sub := timeField.FindSubmatch(m)
		t, err := time.Parse(time.RFC3339Nano, string(sub[2]))
		if err != nil {
			return m
		}
		return []byte(`"` + string(sub[1]) + `":"` + payment.FormatTime(t) + `"`)
	})
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	_, err := c.stdout.Write(out.Bytes())
	return err
}

// timeField is a time field as json.Marshal writes a time.Time. A string
// value cannot hold a match: its quotes are escaped (\").
var timeField = regexp.MustCompile(`"(at|[a-z_]+_at)":"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:Z|[+-][0-9]{2}:[0-9]{2}))"`)

// listOfMerchant runs a merchant's "list" command: the records load
// returns, as JSON under key or as a table of header and a row each.
func listOfMerchant[T any](ctx context.Context, c *cli, name string, args []string, key, header string,
	load func(a *App, merchant string) ([]T, error), row func(w io.Writer, item T)) error {
	a, merchant, _, asJSON, err := c.merchantApp(ctx, name, args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	items, err := load(a, merchant)
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(map[string]any{key: items})
	}
	c.table(header, func(w io.Writer) {
		for _, item := range items {
			row(w, item)
		}
	})
	return nil
}

func (c *cli) table(header string, rows func(w io.Writer)) {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	tw.Flush()
}
