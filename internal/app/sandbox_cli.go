package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/momopay/momopay/internal/payment"
)

// sandboxAnswer plays the payer of a sandbox payment: the operator's
// simulator takes the answer and the service asks it at once
// (AnswerSandboxPayment), and the command says exactly what that did to a
// payment that was already final.
func (c *cli) sandboxAnswer(ctx context.Context, name string, args []string, to payment.Status) error {
	fs, db, asJSON := c.flags(name)
	rest, err := c.parseN(fs, args)
	if err != nil {
		return err
	}
	id := idArg(rest[0])
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	merchant, err := a.Transactions.MerchantOf(ctx, id)
	if errors.Is(err, payment.ErrNotFound) {
		return fmt.Errorf("no transaction %.80q in this database: pass the id that POST /v1/transactions returned, and the server's --db", id)
	}
	if err != nil {
		return err
	}
	t, changed, err := a.AnswerSandboxPayment(ctx, merchant, id, to == payment.StatusSuccess)
	if err != nil {
		return err
	}
	// Settle keeps an answer that contradicts a final state as a
	// reconciliation case (to is SUCCESS or FAILED, never our own TIMEOUT).
	recorded := !changed && t.Status.Final() && t.Status != to
	if *asJSON {
		return c.printJSON(map[string]any{
			"id": t.ID, "status": t.Status, "answer": to, "changed": changed, "reconciliation_case": recorded,
		})
	}
	switch {
	case changed && t.FailureReason != "":
		fmt.Fprintf(c.stdout, "transaction %s is now %s (%s)\n", t.ID, t.Status, t.FailureReason)
	case changed:
		fmt.Fprintf(c.stdout, "transaction %s is now %s\n", t.ID, t.Status)
	case recorded:
		fmt.Fprintf(c.stdout, "transaction %s was already %s and stays so; the contradicting answer %s was recorded as a reconciliation case (see \"momopay reconcile list\")\n", t.ID, t.Status, to)
	default:
		fmt.Fprintf(c.stdout, "transaction %s was already %s; nothing changed and nothing was recorded\n", t.ID, t.Status)
	}
	return nil
}
