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

	"github.com/momopay/momopay/internal/team"
)

// userCommands are the dashboard users' commands, appended to the table.
var userCommands = []command{
	{"user add", "user add --merchant MERCHANT_ID --email EMAIL --role ROLE --password-stdin [--db URL] [--json]",
		"Add a dashboard user (owner, developer or viewer) to a merchant; the password is read from standard input.", (*cli).userAdd},
	{"user list", "user list --merchant MERCHANT_ID [--db URL] [--json]",
		"List a merchant's dashboard users.", (*cli).userList},
	{"user remove", "user remove --merchant MERCHANT_ID EMAIL [--db URL] [--json]",
		"Remove a dashboard user; their sessions end at once. A merchant keeps at least one owner.", (*cli).userRemove},
	{"user passwd", "user passwd --merchant MERCHANT_ID EMAIL --password-stdin [--db URL] [--json]",
		"Set a user's password from standard input; their sessions end at once.", (*cli).userPasswd},
}

// readPassword reads one line of standard input for a command's
// --password-stdin.
func (c *cli) readPassword(name, example string) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(c.stdin, 1024)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: read the password from standard input: %w", name, err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return "", fmt.Errorf("%s: no password on standard input: pipe it in, e.g. echo 'a long password' | momopay %s", name, example)
	}
	return password, nil
}

func (c *cli) userAdd(ctx context.Context, args []string) error {
	var email, role *string
	var pwStdin *bool
	a, merchant, _, asJSON, err := c.merchantApp(ctx, "user add", args, func(fs *flag.FlagSet) {
		email = fs.String("email", "", "the user's sign-in email (required)")
		role = fs.String("role", "", "owner (everything, the team included), developer (keys, webhooks, transactions, sandbox phone) or viewer (read only) (required)")
		pwStdin = fs.Bool("password-stdin", false, "read the password from standard input (required)")
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if *email == "" || *role == "" || !*pwStdin {
		return fmt.Errorf("user add needs --email, --role and --password-stdin: usage: momopay %s", syntaxOf("user add"))
	}
	password, err := c.readPassword("user add", "user add --merchant ID --email EMAIL --role developer --password-stdin")
	if err != nil {
		return err
	}
	u, err := a.Users.Add(ctx, merchant, *email, team.Role(*role), password, time.Now())
	if err != nil {
		return err
	}
	c.audit(ctx, a, merchant, team.ActionUserAdded, u.Email+" ("+string(u.Role)+")")
	if asJSON {
		return c.printJSON(u)
	}
	fmt.Fprintf(c.stdout, "added %s %s (%s)\n", u.Role, u.Email, u.ID)
	return nil
}

func (c *cli) userList(ctx context.Context, args []string) error {
	return listOfMerchant(ctx, c, "user list", args, "users", "ID\tEMAIL\tROLE\tCREATED",
		func(a *App, merchant string) ([]team.User, error) { return a.Users.List(ctx, merchant) },
		func(w io.Writer, u team.User) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", u.ID, u.Email, u.Role, u.CreatedAt.Format(time.RFC3339))
		})
}

// merchantUser finds the merchant's user with email.
func merchantUser(ctx context.Context, a *App, name, merchant, email string) (*team.User, error) {
	u, err := a.Users.ByEmail(ctx, email)
	if errors.Is(err, team.ErrNotFound) || (err == nil && u.MerchantID != merchant) {
		return nil, fmt.Errorf("%s: merchant %s has no user %.80q: \"momopay user list --merchant %s\" shows them", name, merchant, email, merchant)
	}
	return u, err
}

func (c *cli) userRemove(ctx context.Context, args []string) error {
	a, merchant, rest, asJSON, err := c.merchantApp(ctx, "user remove", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	u, err := merchantUser(ctx, a, "user remove", merchant, rest[0])
	if err != nil {
		return err
	}
	if err := a.Users.Remove(ctx, merchant, u.ID); err != nil {
		return err
	}
	c.audit(ctx, a, merchant, team.ActionUserRemoved, u.Email)
	if asJSON {
		return c.printJSON(map[string]string{"id": u.ID, "email": u.Email, "status": "removed"})
	}
	fmt.Fprintf(c.stdout, "removed %s; their sessions have ended\n", u.Email)
	return nil
}

func (c *cli) userPasswd(ctx context.Context, args []string) error {
	var pwStdin *bool
	a, merchant, rest, asJSON, err := c.merchantApp(ctx, "user passwd", args, func(fs *flag.FlagSet) {
		pwStdin = fs.Bool("password-stdin", false, "read the new password from standard input (required)")
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if !*pwStdin {
		return fmt.Errorf("user passwd needs --password-stdin: usage: momopay %s", syntaxOf("user passwd"))
	}
	u, err := merchantUser(ctx, a, "user passwd", merchant, rest[0])
	if err != nil {
		return err
	}
	password, err := c.readPassword("user passwd", "user passwd --merchant ID EMAIL --password-stdin")
	if err != nil {
		return err
	}
	if _, err := a.Users.SetPassword(ctx, merchant, u.ID, "", password, time.Now()); err != nil {
		return err
	}
	c.audit(ctx, a, merchant, team.ActionPassword, u.Email)
	if asJSON {
		return c.printJSON(map[string]string{"id": u.ID, "email": u.Email, "status": "password_changed"})
	}
	fmt.Fprintf(c.stdout, "changed the password of %s; their sessions have ended\n", u.Email)
	return nil
}
