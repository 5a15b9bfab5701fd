// Command sandbox walks through one payment against a momopay running in
// sandbox mode: it requests a payment, receives the webhook that reports its
// outcome, and prints the event.
//
// Start momopay in sandbox mode, create an API key, register
// http://127.0.0.1:8000/webhooks/momopay as a webhook endpoint, as the README
// does (momopay webhook create prints its whsec_ secret; so does the
// dashboard's Webhooks page), then:
//
//	export MOMOPAY_URL=http://127.0.0.1:8080
//	export MOMOPAY_API_KEY=service_live_...
//	export MOMOPAY_WEBHOOK_SECRET=whsec_...
//	go run ./examples/sandbox
//
// The sandbox payer +23560000001 confirms after about two seconds; try
// +23560000002 (refuses) or +23560000005 (operator unavailable) with -phone.
// Without a webhook secret the program polls the transaction instead.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/momopay/momopay/client"
)

// webhookPath is where the program receives webhooks: the README's URL.
const webhookPath = "/webhooks/momopay"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	baseURL := fs.String("url", envOr(getenv, "MOMOPAY_URL", client.DefaultBaseURL), "momopay base URL (env MOMOPAY_URL)")
	apiKey := fs.String("key", getenv("MOMOPAY_API_KEY"), "API key (env MOMOPAY_API_KEY)")
	secret := fs.String("secret", getenv("MOMOPAY_WEBHOOK_SECRET"), "webhook endpoint secret (env MOMOPAY_WEBHOOK_SECRET); empty = poll instead")
	// Not 9090: momopay serve's own admin listener is there by default.
	listen := fs.String("listen", "127.0.0.1:8000", "address of the local webhook receiver")
	phone := fs.String("phone", "+23560000001", "payer number (sandbox test numbers choose the outcome)")
	amount := fs.Int64("amount", 2500, "amount in XAF")
	operator := fs.String("operator", string(client.OperatorAirtel), "AIRTEL or MOOV")
	wait := fs.Duration("wait", 2*time.Minute, "how long to wait for the outcome")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // -h printed the usage: not a failure
	} else if err != nil {
		return err
	}
	if *apiKey == "" {
		return errors.New("no API key: set MOMOPAY_API_KEY or -key (create one in the dashboard)")
	}
	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	c := client.New(*apiKey, client.WithBaseURL(*baseURL), client.WithUserAgent("momopay-sandbox-example"))

	// Listen before paying, so the webhook cannot arrive before we are ready.
	events := make(chan *client.Event, 8)
	if *secret != "" {
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return fmt.Errorf("webhook receiver: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("POST "+webhookPath, client.WebhookHandler(*secret, client.NewMemoryDeliveryStore(),
			func(ctx context.Context, ev *client.Event) error {
				select {
				case events <- ev:
					return nil
				case <-ctx.Done(): // the service will send it again
					return ctx.Err()
				}
			}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		fmt.Fprintf(stdout, "listening for webhooks on http://%s%s\n", ln.Addr(), webhookPath)
	}

	tx, err := c.CreateTransaction(ctx, client.CreateTransactionParams{
		Reference:   fmt.Sprintf("sandbox-%d", time.Now().UnixNano()),
		Amount:      *amount,
		Operator:    client.Operator(*operator),
		PhoneNumber: *phone,
		Description: "momopay sandbox example",
	})
	if err != nil {
		return fmt.Errorf("create transaction: %w", err)
	}
	fmt.Fprintf(stdout, "created %s (%s) for %d %s: %s; expires at %s\n",
		tx.ID, tx.Reference, tx.Amount, tx.Currency, tx.Status, tx.ExpiresAt.Format(time.RFC3339))

	if *secret == "" {
		return poll(ctx, c, tx.ID, stdout)
	}
	for {
		select {
		case ev := <-events:
			if ev.Data.ID != tx.ID {
				continue // an event for an earlier payment
			}
			out, _ := json.MarshalIndent(ev, "", "  ")
			fmt.Fprintf(stdout, "webhook %s (delivery %s):\n%s\n", ev.Event, ev.DeliveryID, out)
			return nil
		case <-ctx.Done():
			return fmt.Errorf("no webhook for %s within %s: is http://%s%s registered with this secret?", tx.ID, *wait, *listen, webhookPath)
		}
	}
}

// poll reads the transaction until it is final, for runs without a webhook.
func poll(ctx context.Context, c *client.Client, id string, stdout io.Writer) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still not final: %w", id, ctx.Err())
		case <-t.C:
		}
		tx, err := c.GetTransaction(ctx, id)
		if err != nil {
			return err
		}
		if tx.Status.Final() {
			fmt.Fprintf(stdout, "%s is %s (updated %s)\n", tx.ID, tx.Status, tx.UpdatedAt.Format(time.RFC3339))
			return nil
		}
	}
}

func envOr(getenv func(string) string, key, fallback string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return fallback
}
