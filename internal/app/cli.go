package app

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/momopay/momopay/internal/payment"
)

// Version is set at build time with -ldflags "-X ...app.Version=...".
var Version = "dev"

// Env reads configuration from the environment; tests pass a map lookup.
type Env func(string) string

// Run is the whole program: it parses args (without the program name) and
// runs one command. It never calls os.Exit, so tests can run it in-process.
func Run(ctx context.Context, args []string, getenv Env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	c := &cli{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	cmd, rest := args[0], args[1:]
	if sub, ok := subcommands[cmd]; ok {
		if len(rest) == 0 {
			return fmt.Errorf("usage: momopay %s %s", cmd, strings.Join(sub, "|"))
		}
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	fn, ok := commands[cmd]
	if !ok {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	return fn(c, ctx, rest)
}

const usage = `momopay: Mobile Money payments for merchants in Chad (Airtel, Moov; XAF)

Commands:
  serve                 run the API and background workers
  migrate               apply the database schema
  merchant create|list  manage merchants
  apikey create|list|revoke  manage a merchant's API keys
  sandbox confirm|refuse TRANSACTION_ID  answer a sandbox payment as the payer
  reconcile list        late operator outcomes to reconcile by hand
  webhook create|list|disable|delete  manage a merchant's webhook endpoints
  webhook deliveries|resend|test      delivery history, manual re-send, test event
  version               print the version

Every command takes --db (default: momopay.db, or MOMOPAY_DATABASE_URL).
webhook commands follow MOMOPAY_MODE like serve (sandbox allows http and loopback URLs).
Run "momopay COMMAND -h" for its flags.
`

var subcommands = map[string][]string{
	"merchant":  {"create", "list"},
	"apikey":    {"create", "list", "revoke"},
	"sandbox":   {"confirm", "refuse"},
	"reconcile": {"list"},
	"webhook":   {"create", "list", "disable", "delete", "deliveries", "resend", "test"},
}

// commands is the command table; each entry parses its own flags.
var commands = map[string]func(c *cli, ctx context.Context, args []string) error{
	"serve":           (*cli).serve,
	"migrate":         (*cli).migrate,
	"merchant create": (*cli).merchantCreate,
	"merchant list":   (*cli).merchantList,
	"apikey create":   (*cli).apikeyCreate,
	"apikey list":     (*cli).apikeyList,
	"apikey revoke":   (*cli).apikeyRevoke,
	"sandbox confirm": func(c *cli, ctx context.Context, a []string) error {
		return c.sandboxAnswer(ctx, a, payment.StatusSuccess)
	},
	"sandbox refuse": func(c *cli, ctx context.Context, a []string) error {
		return c.sandboxAnswer(ctx, a, payment.StatusFailed)
	},
	"reconcile list": (*cli).reconcileList,

	"webhook create":     (*cli).webhookCreate,
	"webhook list":       (*cli).webhookList,
	"webhook disable":    (*cli).webhookDisable,
	"webhook delete":     (*cli).webhookDelete,
	"webhook deliveries": (*cli).webhookDeliveries,
	"webhook resend":     (*cli).webhookResend,
	"webhook test":       (*cli).webhookTest,
	"version": func(c *cli, _ context.Context, _ []string) error {
		fmt.Fprintln(c.stdout, "momopay", Version)
		return nil
	},
	"help": func(c *cli, _ context.Context, _ []string) error { fmt.Fprint(c.stdout, usage); return nil },
}

type cli struct {
	getenv Env
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// flags starts a flag set with the options every command shares.
func (c *cli) flags(name string) (*flag.FlagSet, *string, *bool) {
	fs := flag.NewFlagSet("momopay "+name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	db := fs.String("db", or(c.getenv("MOMOPAY_DATABASE_URL"), "momopay.db"), "database: a SQLite path, sqlite:PATH, or postgres://… (env MOMOPAY_DATABASE_URL)")
	asJSON := fs.Bool("json", false, "print one JSON object on stdout")
	return fs, db, asJSON
}

// parse parses flags that may come before or after positional arguments
// (momopay apikey revoke KEY_ID --db X), which flag.Parse alone does not,
// and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// parseNone parses a command that takes no positional arguments.
func parseNone(fs *flag.FlagSet, args []string) error {
	rest, err := parse(fs, args)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%s: unexpected argument %q", fs.Name(), rest[0])
	}
	return err
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// open wires the app for an administrative command: no workers, quiet
// logs, and the mode of MOMOPAY_MODE as for serve (the mode decides, for
// one, which webhook URLs are accepted).
func (c *cli) open(ctx context.Context, dbURL string) (*App, error) {
	return Open(ctx, Config{DatabaseURL: dbURL, Mode: or(c.getenv("MOMOPAY_MODE"), ModeSandbox), Logger: slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *cli) table(header string, rows func(w io.Writer)) {
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(tw)
	tw.Flush()
}

func (c *cli) migrate(ctx context.Context, args []string) error {
	fs, db, _ := c.flags("migrate")
	if err := parseNone(fs, args); err != nil {
		return err
	}
	a, err := c.open(ctx, *db) // Open applies the migrations
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintf(c.stdout, "%s database is up to date\n", a.DB.Dialect)
	return nil
}

func (c *cli) reconcileList(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("reconcile list")
	if err := parseNone(fs, args); err != nil {
		return err
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	cases, err := a.Cases.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(map[string]any{"cases": cases, "count": len(cases)})
	}
	c.table("CREATED\tTRANSACTION\tFINAL\tREPORTED\tSOURCE\tDETAIL", func(w io.Writer) {
		for _, k := range cases {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", k.CreatedAt.Format(time.RFC3339), k.TransactionID, k.FinalStatus, k.ReportedStatus, k.Source, k.Detail)
		}
	})
	fmt.Fprintf(c.stdout, "%d case(s)\n", len(cases))
	return nil
}
