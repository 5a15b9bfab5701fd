package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/webhook"
)

// oneID checks that a command got exactly its one positional id.
func oneID(rest []string, usage string) (string, error) {
	if len(rest) != 1 {
		return "", errors.New("usage: momopay " + usage)
	}
	return idArg(rest[0]), nil
}

func (c *cli) webhookCreate(ctx context.Context, args []string) error {
	var url *string
	a, merchant, _, asJSON, err := c.merchantApp(ctx, "webhook create", args, func(fs *flag.FlagSet) {
		url = fs.String("url", "", "receiver URL (required): https only in live mode")
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if *url == "" {
		return errors.New("usage: momopay webhook create --merchant ID --url URL [--json]")
	}
	e, err := a.Webhooks.CreateEndpoint(ctx, merchant, *url)
	if err != nil {
		return err
	}
	c.audit(ctx, a, merchant, team.ActionEndpointAdded, e.URL+" ("+e.ID+")")
	if asJSON {
		return c.printJSON(map[string]string{"id": e.ID, "url": e.URL, "secret": e.Secret})
	}
	fmt.Fprintf(c.stdout, "webhook endpoint %s for %s\nsigning secret (keep it; verify webhook-signature with it, which also holds the previous secret's signature for 24 hours after a rotation):\n%s\n", e.ID, e.URL, e.Secret)
	return nil
}

func (c *cli) webhookList(ctx context.Context, args []string) error {
	return listOfMerchant(ctx, c, "webhook list", args, "endpoints", "ID\tURL\tENABLED\tCREATED",
		func(a *App, merchant string) ([]webhook.Endpoint, error) { return a.Webhooks.Endpoints(ctx, merchant) },
		func(w io.Writer, e webhook.Endpoint) {
			fmt.Fprintf(w, "%s\t%s\t%t\t%s\n", e.ID, e.URL, e.Enabled, e.CreatedAt.Format(time.RFC3339))
		})
}

func (c *cli) webhookEnable(ctx context.Context, args []string) error {
	return c.webhookEndpointChange(ctx, "webhook enable", args, switchTo(true), team.ActionEndpointEnabled, "enabled")
}

func (c *cli) webhookDisable(ctx context.Context, args []string) error {
	return c.webhookEndpointChange(ctx, "webhook disable", args, switchTo(false), team.ActionEndpointDisabled, "disabled")
}

func (c *cli) webhookDelete(ctx context.Context, args []string) error {
	return c.webhookEndpointChange(ctx, "webhook delete", args, func(s *webhook.Service, ctx context.Context, merchant, id string) (bool, error) {
		return true, s.DeleteEndpoint(ctx, merchant, id) // a second delete finds no endpoint
	}, team.ActionEndpointDeleted, "deleted")
}

// switchTo enables or disables an endpoint, saying whether that changed
// it: an endpoint already so is no change for the audit log.
func switchTo(enabled bool) func(*webhook.Service, context.Context, string, string) (bool, error) {
	return func(s *webhook.Service, ctx context.Context, merchant, id string) (bool, error) {
		return s.SetEndpointEnabled(ctx, merchant, id, enabled)
	}
}

func (c *cli) webhookEndpointChange(ctx context.Context, name string, args []string,
	change func(*webhook.Service, context.Context, string, string) (bool, error), action, done string) error {
	a, merchant, rest, asJSON, err := c.merchantApp(ctx, name, args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	id, err := oneID(rest, name+" --merchant ID ENDPOINT_ID")
	if err != nil {
		return err
	}
	// The audit entry names the endpoint by its URL and id, read before
	// the change: a deleted endpoint is listed nowhere afterwards.
	target := id
	if endpoints, err := a.Webhooks.Endpoints(ctx, merchant); err == nil {
		for _, e := range endpoints {
			if e.ID == id {
				target = e.URL + " (" + e.ID + ")"
			}
		}
	}
	changed, err := change(a.Webhooks, ctx, merchant, id)
	if err != nil {
		return err
	}
	if changed {
		c.audit(ctx, a, merchant, action, target)
	}
	if asJSON {
		return c.printJSON(map[string]string{"id": id, "status": done})
	}
	fmt.Fprintf(c.stdout, "webhook endpoint %s %s\n", id, done)
	return nil
}

func (c *cli) webhookDeliveries(ctx context.Context, args []string) error {
	var limit *int
	a, merchant, _, asJSON, err := c.merchantApp(ctx, "webhook deliveries", args, func(fs *flag.FlagSet) {
		limit = fs.Int("limit", webhook.DefaultDeliveryLimit, "how many recent deliveries to show, newest first")
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if *limit < 1 {
		return fmt.Errorf("--limit must be at least 1")
	}
	ds, err := a.Webhooks.Deliveries(ctx, merchant, *limit)
	if err != nil {
		return err
	}
	if asJSON {
		return c.printJSON(map[string]any{"deliveries": ds})
	}
	// One block per delivery with its attempts below it: the history is
	// what an operator reads this for.
	for _, d := range ds {
		what := "transaction " + d.TransactionID
		if d.Test {
			what = "test event"
		}
		fmt.Fprintf(c.stdout, "%s  %s  %s  %s  %d attempt(s)  %s\n", d.ID, d.Event, what, d.State, d.AttemptCount, d.URL)
		for _, at := range d.Attempts {
			kind := ""
			switch {
			case d.Test:
				kind = "  (test)"
			case at.Manual:
				kind = "  (manual)"
			}
			fmt.Fprintf(c.stdout, "  #%d  %s  %s  %d ms%s\n", at.Number, at.AttemptedAt.Format(time.RFC3339), attemptResult(&at), at.LatencyMS, kind)
		}
		inProgress := len(d.Attempts) > 0 && d.Attempts[len(d.Attempts)-1].InProgress
		if d.State == webhook.StatePending && d.NextAttemptAt != nil && !inProgress {
			fmt.Fprintf(c.stdout, "  next attempt at %s\n", d.NextAttemptAt.Format(time.RFC3339))
		}
	}
	fmt.Fprintf(c.stdout, "%d delivery(ies)\n", len(ds))
	return nil
}

// attemptResult is an attempt's outcome in a few words.
func attemptResult(a *webhook.DeliveryAttempt) string {
	if a.InProgress {
		return "in progress"
	}
	var parts []string
	if a.StatusCode != 0 {
		parts = append(parts, fmt.Sprintf("HTTP %d", a.StatusCode))
	}
	if a.Error != "" {
		parts = append(parts, a.Error)
	}
	return strings.Join(parts, ": ")
}

func (c *cli) webhookResend(ctx context.Context, args []string) error {
	a, merchant, rest, asJSON, err := c.merchantApp(ctx, "webhook resend", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	id, err := oneID(rest, "webhook resend --merchant ID DELIVERY_ID")
	if err != nil {
		return err
	}
	at, err := a.Webhooks.Resend(ctx, merchant, id)
	if err != nil {
		return err
	}
	c.audit(ctx, a, merchant, team.ActionDeliveryResent, id)
	// Say where the delivery stands now: a failed manual attempt of a
	// pending delivery leaves its automatic schedule running.
	d, err := a.Webhooks.Delivery(ctx, merchant, id)
	if err != nil {
		return err
	}
	what := "delivery " + id
	if !at.Succeeded {
		what += " (still " + string(d.State)
		if d.State == webhook.StatePending && d.NextAttemptAt != nil {
			what += ", next automatic attempt at " + d.NextAttemptAt.Format(time.RFC3339)
		}
		what += ")"
	}
	return c.reportSend(what, at, asJSON, map[string]any{"delivery_id": id, "state": d.State, "next_attempt_at": d.NextAttemptAt, "attempt": at})
}

func (c *cli) webhookTest(ctx context.Context, args []string) error {
	a, merchant, rest, asJSON, err := c.merchantApp(ctx, "webhook test", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	id, err := oneID(rest, "webhook test --merchant ID ENDPOINT_ID")
	if err != nil {
		return err
	}
	res, err := a.Webhooks.Test(ctx, merchant, id)
	if err != nil {
		return err
	}
	return c.reportSend("test event to endpoint "+id, &res.DeliveryAttempt, asJSON, res)
}

// reportSend prints the outcome of a synchronous send and fails the command
// when the receiver did not answer 2xx, so scripts can test the exit code.
func (c *cli) reportSend(what string, a *webhook.DeliveryAttempt, asJSON bool, v any) error {
	if asJSON {
		if err := c.printJSON(v); err != nil {
			return err
		}
	} else if a.Succeeded {
		fmt.Fprintf(c.stdout, "%s: delivered (HTTP %d in %d ms)\n", what, a.StatusCode, a.LatencyMS)
	}
	if !a.Succeeded {
		return fmt.Errorf("%s failed: %s", what, attemptResult(a))
	}
	return nil
}

// maxPruneDays bounds webhook prune --days: about 100 years, far past any
// history, and far from overflowing a time.Duration.
const maxPruneDays = 36500

func (c *cli) webhookPrune(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("webhook prune")
	days := fs.Int("days", 0, "delete deliveries created more than this many days ago and not changed since (required, at least 1)")
	merchant := fs.String("merchant", "", "only this merchant's deliveries (default every merchant's)")
	dryRun := fs.Bool("dry-run", false, "count what would be deleted, delete nothing")
	if err := c.parseNone(fs, args); err != nil {
		return err
	}
	if *days < 1 || *days > maxPruneDays {
		return fmt.Errorf("webhook prune: --days must be between 1 and %d (env MOMOPAY_WEBHOOK_HISTORY_DAYS): usage: momopay %s", maxPruneDays, syntaxOf("webhook prune"))
	}
	a, err := c.openFor(ctx, *db, merchant)
	if err != nil {
		return err
	}
	defer a.Close()
	cutoff := time.Now().Add(-time.Duration(*days) * 24 * time.Hour)
	n, err := a.Webhooks.Prune(ctx, *merchant, cutoff, *dryRun)
	if err != nil {
		return fmt.Errorf("webhook prune: %w (%d deliveries deleted before this)", err, n)
	}
	if *asJSON {
		return c.printJSON(map[string]any{"deleted": n, "dry_run": *dryRun, "before": cutoff.UTC().Format(time.RFC3339)})
	}
	verb := "deleted"
	if *dryRun {
		verb = "would delete"
	}
	fmt.Fprintf(c.stdout, "%s %d finished delivery(ies) created before %s, with their attempts\n", verb, n, cutoff.UTC().Format(time.RFC3339))
	return nil
}
