package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/team"
)

func (c *cli) merchantCreate(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("merchant create")
	name := fs.String("name", "", "merchant name (required)")
	email := fs.String("email", "", "dashboard login email (required)")
	pwStdin := fs.Bool("password-stdin", false, "read the dashboard password from standard input (required)")
	if err := c.parseNone(fs, args); err != nil {
		return err
	}
	var missing []string
	for _, f := range []struct {
		flag  string
		unset bool
	}{{"--email EMAIL", *email == ""}, {"--name NAME", *name == ""}, {"--password-stdin", !*pwStdin}} {
		if f.unset {
			missing = append(missing, f.flag)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("merchant create needs %s: usage: momopay %s", strings.Join(missing, " and "), syntaxOf("merchant create"))
	}
	line, err := bufio.NewReader(io.LimitReader(c.stdin, 1024)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the password from standard input: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return errors.New("merchant create: no password on standard input: pipe it in, e.g. echo 'a long password' | momopay merchant create --name NAME --email EMAIL --password-stdin")
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	m, err := a.Merchants.Create(ctx, *name, *email, password, time.Now())
	if errors.Is(err, store.ErrEmailTaken) {
		return fmt.Errorf("merchant create: %w: %s (see \"momopay merchant list\")", err, strings.ToLower(strings.TrimSpace(*email)))
	}
	if err != nil {
		return fmt.Errorf("merchant create: %w", err)
	}
	if *asJSON {
		return c.printJSON(map[string]string{"id": m.ID, "name": m.Name, "email": m.Email})
	}
	fmt.Fprintf(c.stdout, "created merchant %s (%s)\n", m.ID, m.Email)
	return nil
}

func (c *cli) merchantList(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("merchant list")
	if err := c.parseNone(fs, args); err != nil {
		return err
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	ms, err := a.Merchants.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(map[string]any{"merchants": ms})
	}
	c.table("ID\tNAME\tEMAIL\tCREATED", func(w io.Writer) {
		for _, m := range ms {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.ID, m.Name, m.Email, m.CreatedAt.Format(time.RFC3339))
		}
	})
	return nil
}

// idArg is an id as the command line reads it: in any case, as the API
// and the dashboard read ids (they are stored, and printed, in lower
// case), so an id copied from a tool that upper-cases it still names it.
func idArg(s string) string { return strings.ToLower(s) }

// merchantApp parses the flags of a command scoped to one merchant (the
// shared ones, --merchant, and any that more adds), checks the positional
// arguments against the command's syntax, opens the app without workers,
// so it works beside a running server, and checks that the merchant
// exists. It returns the positional arguments.
func (c *cli) merchantApp(ctx context.Context, name string, args []string, more func(*flag.FlagSet)) (*App, string, []string, bool, error) {
	fs, db, asJSON := c.flags(name)
	merchant := fs.String("merchant", "", "merchant id (required; see \"momopay merchant list\")")
	if more != nil {
		more(fs)
	}
	rest, err := c.parseN(fs, args)
	if err != nil {
		return nil, "", nil, false, err
	}
	if *merchant == "" {
		return nil, "", nil, false, fmt.Errorf("%s: --merchant is required: usage: momopay %s", name, syntaxOf(name))
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return nil, "", nil, false, err
	}
	id := idArg(*merchant)
	if err := merchantExists(ctx, a, id); err != nil {
		a.Close()
		return nil, "", nil, false, err
	}
	return a, id, rest, *asJSON, nil
}

// openFor opens the database for a command whose --merchant is optional.
// It reads *merchant as an id (idArg, in place, so that the command
// filters by the id as stored), and a merchant given must exist.
func (c *cli) openFor(ctx context.Context, db string, merchant *string) (*App, error) {
	*merchant = idArg(*merchant)
	a, err := c.open(ctx, db)
	if err != nil || *merchant == "" {
		return a, err
	}
	if err := merchantExists(ctx, a, *merchant); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// merchantExists says, as an error, that a merchant id given to a command
// is none of this database's.
func merchantExists(ctx context.Context, a *App, id string) error {
	ok, err := a.Merchants.Exists(ctx, id)
	if err == nil && !ok {
		err = fmt.Errorf("no merchant %.80q in this database: \"momopay merchant list\" shows them", id)
	}
	return err
}

func (c *cli) apikeyCreate(ctx context.Context, args []string) error {
	a, merchant, _, asJSON, err := c.merchantApp(ctx, "apikey create", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	k, key, err := a.APIKeys.Create(ctx, merchant, time.Now())
	if err != nil {
		return err
	}
	c.audit(ctx, a, merchant, team.ActionKeyCreated, team.KeyTarget(k.Prefix, k.ID))
	if asJSON {
		return c.printJSON(map[string]string{"id": k.ID, "key": key})
	}
	fmt.Fprintf(c.stdout, "API key %s (shown once, keep it):\n%s\n", k.ID, key)
	return nil
}

func (c *cli) apikeyList(ctx context.Context, args []string) error {
	return listOfMerchant(ctx, c, "apikey list", args, "api_keys", "ID\tPREFIX\tCREATED\tLAST USED\tREVOKED",
		func(a *App, merchant string) ([]store.APIKey, error) { return a.APIKeys.List(ctx, merchant) },
		func(w io.Writer, k store.APIKey) {
			fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Prefix, k.CreatedAt.Format(time.RFC3339), when(k.LastUsedAt), when(k.RevokedAt))
		})
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func (c *cli) apikeyRevoke(ctx context.Context, args []string) error {
	a, merchant, rest, asJSON, err := c.merchantApp(ctx, "apikey revoke", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	id := idArg(rest[0])
	target := id
	if keys, err := a.APIKeys.List(ctx, merchant); err == nil {
		for _, k := range keys {
			if k.ID == id {
				target = team.KeyTarget(k.Prefix, k.ID)
			}
		}
	}
	revoked, err := a.APIKeys.Revoke(ctx, merchant, id, time.Now())
	if errors.Is(err, store.ErrKeyNotFound) {
		return fmt.Errorf("merchant %s has no API key %.80q: \"momopay apikey list --merchant %s\" shows its keys", merchant, id, merchant)
	}
	if err != nil {
		return err
	}
	if revoked {
		c.audit(ctx, a, merchant, team.ActionKeyRevoked, target)
	}
	if asJSON {
		return c.printJSON(map[string]string{"id": id, "status": "revoked"})
	}
	fmt.Fprintf(c.stdout, "revoked API key %s\n", id)
	return nil
}

func (c *cli) reconcileList(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("reconcile list")
	open := fs.Bool("open", false, "only the cases not resolved yet (a person resolves them on the dashboard's reconciliation page)")
	merchant := fs.String("merchant", "", "only this merchant's cases")
	if err := c.parseNone(fs, args); err != nil {
		return err
	}
	a, err := c.openFor(ctx, *db, merchant)
	if err != nil {
		return err
	}
	defer a.Close()
	all, err := a.Cases.List(ctx)
	if err != nil {
		return err
	}
	cases, unresolved := []payment.ReconciliationCase{}, 0
	for _, k := range all {
		if (*open && k.ResolvedAt != nil) || (*merchant != "" && k.MerchantID != *merchant) {
			continue
		}
		if k.ResolvedAt == nil {
			unresolved++
		}
		cases = append(cases, k)
	}
	if *asJSON {
		return c.printJSON(map[string]any{"cases": cases, "count": len(cases), "open": unresolved})
	}
	c.table("CREATED\tMERCHANT\tTRANSACTION\tFINAL\tREPORTED\tSOURCE\tRESOLVED\tDETAIL", func(w io.Writer) {
		for _, k := range cases {
			resolved := "open"
			if k.ResolvedAt != nil {
				resolved = k.ResolvedAt.Format(time.RFC3339) + " by " + k.ResolvedBy
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.CreatedAt.Format(time.RFC3339), k.MerchantID, k.TransactionID,
				k.FinalStatus, k.ReportedStatus, k.Source, resolved, k.Detail)
		}
	})
	fmt.Fprintf(c.stdout, "%d case(s), %d open\n", len(cases), unresolved)
	return nil
}
