package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/momopay/momopay/internal/operator"
)

// errHelpShown ends a command that printed its help; Run returns nil.
var errHelpShown = errors.New("help shown")

// flagEnv names the environment variable behind a flag whose variable is
// not the rule's (see envOf). A flag on the command line wins over its
// variable, which wins over the default.
var flagEnv = map[string]string{
	"db":          "MOMOPAY_DATABASE_URL",
	"addr":        "MOMOPAY_ADDR",
	"mode":        "MOMOPAY_MODE",
	"pending-ttl": "MOMOPAY_PENDING_TTL",
	"rate-limit":  "MOMOPAY_RATE_LIMIT",
	"rate-burst":  "MOMOPAY_RATE_BURST",
	// The Go client's examples read MOMOPAY_URL (the API's address):
	// webhook create --url must not take it up.
	"url":   "MOMOPAY_WEBHOOK_URL",
	"limit": "MOMOPAY_DELIVERY_LIMIT",
	"name":  "MOMOPAY_MERCHANT_NAME",
	"email": "MOMOPAY_MERCHANT_EMAIL",
	"to":    "MOMOPAY_BACKUP_TO",
	"by":    "MOMOPAY_REFUND_BY",
	"open":  "MOMOPAY_RECONCILE_OPEN",
	// webhook prune's, named for what they prune.
	"days":    "MOMOPAY_WEBHOOK_HISTORY_DAYS",
	"dry-run": "MOMOPAY_PRUNE_DRY_RUN",
}

// envOf is the environment variable of a flag: every flag of every command
// has one, MOMOPAY_ and the flag's name in upper case with "_" for "-"
// (--shutdown-grace, MOMOPAY_SHUTDOWN_GRACE), unless flagEnv names another.
func envOf(flagName string) string {
	if env, ok := flagEnv[flagName]; ok {
		return env
	}
	return "MOMOPAY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Where a flag's value came from, as momopay config check shows it.
const (
	fromDefault = "default"
	fromEnv     = "env"
	fromFlag    = "flag"
	// fromBadEnv: the variable is set but does not parse, so the default
	// holds (and config check names the problem).
	fromBadEnv = "default (env invalid)"
)

// newFlags starts the flag set of a command. It prints nothing itself:
// parse shows help on stdout and returns errors for main to print once.
func (c *cli) newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// flags starts a flag set with the options every database command shares.
func (c *cli) flags(name string) (*flag.FlagSet, *string, *bool) {
	fs := c.newFlags(name)
	c.mode = fs.String("mode", ModeSandbox, "sandbox or live, as the server runs: webhook URLs follow it, and a database that has served live is refused in sandbox mode (env MOMOPAY_MODE)")
	return fs, dbFlag(fs), jsonFlag(fs)
}

func dbFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "momopay.db", "database: a SQLite file path, sqlite:PATH, postgres://USER@HOST:5432/DB or \"host=HOST user=USER dbname=DB\" (env MOMOPAY_DATABASE_URL)")
}

func jsonFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("json", false, "print one JSON object on stdout")
}

// parse parses flags that may come before or after positional arguments
// (momopay apikey revoke KEY_ID --db X), which flag.Parse alone does not,
// fills flags left unset from their environment variables, and returns the
// positional arguments. On -h it prints the command's help and returns
// errHelpShown.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	var errs []error
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.printHelp(fs)
			return nil, errHelpShown
		}
		if err != nil && fs.Lookup("json") == nil && strings.HasSuffix(err.Error(), "not defined: -json") {
			return nil, fmt.Errorf("%s does not offer --json: its output is not a result to parse (run \"momopay %s -h\" for its usage)", fs.Name(), fs.Name())
		}
		if err != nil && c.inspect != nil {
			// config check names every bad flag, not the first: go on
			// with the arguments after the bad one.
			errs = append(errs, fmt.Errorf("command line: %v", err))
			if rest := fs.Args(); len(rest) < len(args) {
				args = rest
			} else {
				args = args[1:] // "---x": Parse refused it without taking it
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v (run \"momopay %s -h\" for its usage)", fs.Name(), err, fs.Name())
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	from := map[string]string{}
	fs.Visit(func(f *flag.Flag) { from[f.Name] = fromFlag })
	if len(errs) > 0 {
		// A value that failed to parse may have left a zero behind (a
		// duration does): the flag counts as not given, at its default.
		fs.VisitAll(func(f *flag.Flag) {
			if from[f.Name] == "" {
				f.Value.Set(f.DefValue)
			}
		})
	}
	// Every variable is read, and every bad one named, before giving up.
	fs.VisitAll(func(f *flag.Flag) {
		env := envOf(f.Name)
		if from[f.Name] != "" {
			return
		}
		from[f.Name] = fromDefault
		if v := c.getenv(env); v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				errs = append(errs, fmt.Errorf("%s=%q is not a valid value for --%s: %v", env, v, f.Name, e))
				// A failed Set may leave a zero value. Value.Set, not
				// fs.Set: the flag stays unset for fs.Visit, as it is
				// for the checks that ask whether it was given.
				f.Value.Set(f.DefValue)
				from[f.Name] = fromBadEnv
				return
			}
			from[f.Name] = fromEnv
		}
	})
	if c.inspect != nil {
		// momopay config check: it reports the problems itself, but
		// an argument it would ignore is refused here.
		if want := positionalNames(fs.Name()); len(positional) != len(want) {
			return nil, &argCountError{cmd: fs.Name(), want: want, got: positional}
		}
		c.inspect(fs, from, errs)
		return nil, errInspected
	}
	if len(errs) > 0 {
		return positional, badVariables(errs)
	}
	return positional, nil
}

// badVariables are the environment variables that did not parse, one
// error each: serve names them with the problems its checks find.
type badVariables []error

func (b badVariables) Error() string   { return errors.Join(b...).Error() }
func (b badVariables) Unwrap() []error { return b }

// argCountError says that a command got other positional arguments than
// its syntax names.
type argCountError struct {
	cmd       string
	want, got []string
}

func (e *argCountError) Error() string {
	return fmt.Sprintf("%s takes %s, got %s: usage: momopay %s", e.cmd, count(e.want), count(e.got), syntaxOf(e.cmd))
}

// errInspected ends a command run only to read its settings (cli.inspect).
var errInspected = errors.New("settings read")

// parseNone parses a command that takes no positional arguments.
func (c *cli) parseNone(fs *flag.FlagSet, args []string) error {
	_, err := c.parseN(fs, args)
	return err
}

// parseN parses a command and checks that it got exactly the positional
// arguments its syntax names (the upper-case words, such as KEY_ID).
func (c *cli) parseN(fs *flag.FlagSet, args []string) ([]string, error) {
	rest, err := c.parse(fs, args)
	if err != nil {
		return nil, err
	}
	if want := positionalNames(fs.Name()); len(rest) != len(want) {
		return nil, &argCountError{cmd: fs.Name(), want: want, got: rest}
	}
	return rest, nil
}

// positionalNames are the arguments of a command's syntax that are not
// flags or flag values: KEY_ID in "apikey revoke --merchant MERCHANT_ID KEY_ID".
func positionalNames(name string) []string {
	words := strings.Fields(syntaxOf(name))
	var out []string
	for i := len(strings.Fields(name)); i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "--"):
			if i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") && !strings.HasPrefix(words[i+1], "[") {
				i++ // its value, as in --merchant MERCHANT_ID
			}
		case strings.HasPrefix(w, "["):
			return out // optional flags come last
		default:
			out = append(out, w)
		}
	}
	return out
}

// count names how many arguments a command got, each by its first 80
// bytes at most: what was passed is echoed, but not a 100 KB argument whole.
func count(args []string) string {
	clipped := make([]string, len(args))
	for i, a := range args {
		clipped[i] = operator.Clip(a, 80)
	}
	switch len(args) {
	case 0:
		return "no arguments"
	case 1:
		return fmt.Sprintf("one argument (%s)", clipped[0])
	}
	return fmt.Sprintf("%d arguments (%s)", len(args), strings.Join(clipped, " "))
}

func syntaxOf(name string) string {
	if cmd := lookup(name); cmd != nil {
		return cmd.syntax
	}
	return name
}

// printHelp prints a command's full syntax, what it does and its flags.
func (c *cli) printHelp(fs *flag.FlagSet) {
	fmt.Fprintf(c.stdout, "usage: momopay %s\n", syntaxOf(fs.Name()))
	if cmd := lookup(fs.Name()); cmd != nil {
		fmt.Fprintf(c.stdout, "\n%s\n", cmd.summary)
	}
	fmt.Fprintf(c.stdout, "\nflags:\n")
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, "(env ") {
			f.Usage += " (env " + envOf(f.Name) + ")"
		}
	})
	fs.SetOutput(c.stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
