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

	"github.com/momopay/momopay/internal/api"
	"github.com/momopay/momopay/internal/payment"
)

// defaultRateLimit is what serve applies per merchant.
var defaultRateLimit = api.DefaultRateLimit

func (c *cli) merchantCreate(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("merchant create")
	name := fs.String("name", "", "merchant name (required)")
	email := fs.String("email", "", "dashboard login email (required)")
	pwStdin := fs.Bool("password-stdin", false, "read the dashboard password from standard input (required)")
	if err := parseNone(fs, args); err != nil {
		return err
	}
	if *name == "" || *email == "" || !*pwStdin {
		return errors.New("usage: momopay merchant create --name NAME --email EMAIL --password-stdin [--json]")
	}
	line, err := bufio.NewReader(io.LimitReader(c.stdin, 1024)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	m, err := a.Merchants.Create(ctx, *name, *email, strings.TrimRight(line, "\r\n"), time.Now())
	if err != nil {
		return err
	}
	if *asJSON {
		return c.printJSON(map[string]string{"id": m.ID, "name": m.Name, "email": m.Email})
	}
	fmt.Fprintf(c.stdout, "created merchant %s (%s)\n", m.ID, m.Email)
	return nil
}

func (c *cli) merchantList(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("merchant list")
	if err := parseNone(fs, args); err != nil {
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

// merchantApp parses the flags of a command scoped to one merchant (the
// shared ones, --merchant, and any that more adds), opens the app without
// workers, so it works beside a running server, and checks that the
// merchant exists. It returns the positional arguments.
func (c *cli) merchantApp(ctx context.Context, name string, args []string, more func(*flag.FlagSet)) (*App, string, []string, bool, error) {
	fs, db, asJSON := c.flags(name)
	merchant := fs.String("merchant", "", "merchant id (required)")
	if more != nil {
		more(fs)
	}
	rest, err := parse(fs, args)
	if err != nil {
		return nil, "", nil, false, err
	}
	if *merchant == "" {
		return nil, "", nil, false, fmt.Errorf("momopay %s: --merchant is required", name)
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return nil, "", nil, false, err
	}
	ok, err := a.Merchants.Exists(ctx, *merchant)
	if err == nil && !ok {
		err = fmt.Errorf("no merchant %q", *merchant)
	}
	if err != nil {
		a.Close()
		return nil, "", nil, false, err
	}
	return a, *merchant, rest, *asJSON, nil
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
	if asJSON {
		return c.printJSON(map[string]string{"id": k.ID, "key": key})
	}
	fmt.Fprintf(c.stdout, "API key %s (shown once, keep it):\n%s\n", k.ID, key)
	return nil
}

func (c *cli) apikeyList(ctx context.Context, args []string) error {
	a, merchant, _, asJSON, err := c.merchantApp(ctx, "apikey list", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	keys, err := a.APIKeys.List(ctx, merchant)
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(map[string]any{"api_keys": keys})
	}
	c.table("ID\tPREFIX\tCREATED\tLAST USED\tREVOKED", func(w io.Writer) {
		for _, k := range keys {
			fmt.Fprintf(w, "%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Prefix, k.CreatedAt.Format(time.RFC3339), when(k.LastUsedAt), when(k.RevokedAt))
		}
	})
	return nil
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func (c *cli) apikeyRevoke(ctx context.Context, args []string) error {
	a, merchant, rest, _, err := c.merchantApp(ctx, "apikey revoke", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	if len(rest) != 1 {
		return errors.New("usage: momopay apikey revoke --merchant ID KEY_ID")
	}
	if err := a.APIKeys.Revoke(ctx, merchant, rest[0], time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "revoked API key %s\n", rest[0])
	return nil
}

// sandboxAnswer plays the payer of a sandbox payment: it settles the
// transaction as the operator's callback would.
func (c *cli) sandboxAnswer(ctx context.Context, args []string, to payment.Status) error {
	fs, db, _ := c.flags("sandbox")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return errors.New("usage: momopay sandbox confirm|refuse TRANSACTION_ID")
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	merchant, err := a.Transactions.MerchantOf(ctx, rest[0])
	if err != nil {
		return err
	}
	t, changed, err := a.Payments.Settle(ctx, merchant, rest[0], to, payment.SourceSandbox, "sandbox: answered by hand")
	if err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(c.stdout, "transaction %s was already %s; the answer was recorded for reconciliation\n", t.ID, t.Status)
		return nil
	}
	fmt.Fprintf(c.stdout, "transaction %s is now %s\n", t.ID, t.Status)
	return nil
}
