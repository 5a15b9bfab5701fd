package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/team"
)

// maxRequester bounds refund --by, which is kept with the refund.
const maxRequester = 200

// refund gives a paid transaction's money back to the payer through its
// operator (momopay refund TRANSACTION_ID), recording who asked.
func (c *cli) refund(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("refund")
	by := fs.String("by", "", "who asks for the refund, recorded with it (default: $USER@host, as the audit log names who ran the command)")
	rest, err := c.parseN(fs, args)
	if err != nil {
		return err
	}
	requester := or(*by, c.operatorWho())
	if !payment.IsText(requester) || utf8.RuneCountInString(requester) > maxRequester {
		// It is kept with the refund and shown in the audit log.
		return fmt.Errorf("refund: --by must be text of at most %d characters without control characters", maxRequester)
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	id := idArg(rest[0])
	merchant, err := a.Transactions.MerchantOf(ctx, id)
	if errors.Is(err, payment.ErrNotFound) {
		return fmt.Errorf("no transaction %.80q in this database: pass the transaction's id and the server's --db", id)
	}
	if err != nil {
		return err
	}
	// The refund's request and answer go into the merchant's audit log
	// with the refund's own writes.
	r, err := a.Payments.Refund(ctx, merchant, id, requester, payment.Actor{Name: c.operatorName(), Address: auditAddress})
	if err != nil {
		return err
	}
	// Only a refund done exits 0, as "webhook resend" does for a delivery:
	// a script must not read a refusal or a lost answer as money returned.
	var failed error
	switch r.Status {
	case payment.RefundRefunded:
	case payment.RefundRefused:
		failed = fmt.Errorf("transaction %s: the operator refused the refund: %s %s (refund %s; you may ask again)", id, r.OperatorCode, r.OperatorDetail, r.ID)
	case payment.RefundNotSent:
		failed = fmt.Errorf("transaction %s: the refund was not sent, the operator could not be reached (%s); no money moved, you may ask again (refund %s)", id, r.OperatorDetail, r.ID)
	default:
		failed = fmt.Errorf("transaction %s: the operator's answer was lost (%s); check with the operator before asking again (refund %s)", id, r.OperatorDetail, r.ID)
	}
	if *asJSON {
		if err := c.printJSON(refundJSON(r)); err != nil {
			return err
		}
		return failed
	}
	if failed != nil {
		return failed
	}
	fmt.Fprintf(c.stdout, "transaction %s: %d XAF refunded to the payer (refund %s, operator code %s)\n", id, r.Amount, r.ID, or(r.OperatorCode, "none"))
	return nil
}

func refundJSON(r *payment.Refund) map[string]any {
	out := map[string]any{
		"id": r.ID, "transaction_id": r.TransactionID, "amount": r.Amount, "requested_by": r.RequestedBy, "status": r.Status,
		"operator_code": r.OperatorCode, "operator_detail": r.OperatorDetail, "operator_ref": r.OperatorRef,
		"requested_at": payment.FormatTime(r.RequestedAt),
	}
	if !r.AnsweredAt.IsZero() {
		out["answered_at"] = payment.FormatTime(r.AnsweredAt)
	}
	return out
}

// merchantAutoRefund sets a merchant's policy for a SUCCESS the operator
// reports after the payment ended TIMEOUT: refund it at once (on), or only
// record it for reconciliation (off, the default).
func (c *cli) merchantAutoRefund(ctx context.Context, args []string) error {
	a, merchant, rest, asJSON, err := c.merchantApp(ctx, "merchant auto-refund", args, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	var on bool
	switch rest[0] {
	case "on":
		on = true
	case "off":
	default:
		return fmt.Errorf("merchant auto-refund: say on or off, not %q", rest[0])
	}
	changed, err := a.Refunds.SetAutoRefundLateSuccess(ctx, merchant, on)
	if err != nil {
		return err
	}
	if changed {
		action := team.ActionAutoRefundOff
		if on {
			action = team.ActionAutoRefundOn
		}
		c.audit(ctx, a, merchant, action, team.AutoRefundTarget)
	}
	if asJSON {
		return c.printJSON(map[string]any{"merchant_id": merchant, "auto_refund_late_success": on})
	}
	if on {
		fmt.Fprintf(c.stdout, "merchant %s: a SUCCESS reported after TIMEOUT is now refunded automatically\n", merchant)
	} else {
		fmt.Fprintf(c.stdout, "merchant %s: a SUCCESS reported after TIMEOUT is now only recorded for reconciliation\n", merchant)
	}
	return nil
}

// transactionShow prints one transaction as the service's operators see
// it: beside the /v1 fields, what the operator said (its reference, its
// code, our failure reason) and the refunds.
func (c *cli) transactionShow(ctx context.Context, args []string) error {
	fs, db, asJSON := c.flags("transaction show")
	rest, err := c.parseN(fs, args)
	if err != nil {
		return err
	}
	a, err := c.open(ctx, *db)
	if err != nil {
		return err
	}
	defer a.Close()
	id := idArg(rest[0])
	merchant, err := a.Transactions.MerchantOf(ctx, id)
	if errors.Is(err, payment.ErrNotFound) {
		return fmt.Errorf("no transaction %.80q in this database", id)
	}
	if err != nil {
		return err
	}
	t, err := a.Transactions.Transaction(ctx, merchant, id)
	if err != nil {
		return err
	}
	refunds, err := a.Refunds.List(ctx, merchant, id)
	if err != nil {
		return err
	}
	if *asJSON {
		rs := []map[string]any{}
		for i := range refunds {
			rs = append(rs, refundJSON(&refunds[i]))
		}
		return c.printJSON(map[string]any{
			"id": t.ID, "merchant_id": t.MerchantID, "reference": t.Reference, "internal_ref": t.InternalRef, "amount": t.Amount,
			"operator": t.Operator, "phone_number": t.PhoneNumber, "status": t.Status, "created_at": payment.FormatTime(t.CreatedAt),
			"updated_at": payment.FormatTime(t.UpdatedAt), "expires_at": payment.FormatTime(t.ExpiresAt),
			"operator_ref": t.OperatorRef, "operator_code": t.OperatorCode, "failure_reason": t.FailureReason, "refunds": rs,
		})
	}
	c.table("FIELD\tVALUE", func(w io.Writer) {
		for _, row := range [][2]string{
			{"id", t.ID}, {"merchant", t.MerchantID}, {"reference", t.Reference}, {"internal_ref", t.InternalRef},
			{"amount", fmt.Sprintf("%d %s", t.Amount, t.Currency)}, {"operator", string(t.Operator)}, {"phone_number", t.PhoneNumber},
			{"status", string(t.Status)}, {"failure_reason", or(t.FailureReason, "-")}, {"operator_code", or(t.OperatorCode, "-")},
			{"operator_ref", or(t.OperatorRef, "-")}, {"created_at", payment.FormatTime(t.CreatedAt)},
			{"updated_at", payment.FormatTime(t.UpdatedAt)}, {"expires_at", payment.FormatTime(t.ExpiresAt)},
		} {
			fmt.Fprintf(w, "%s\t%s\n", row[0], row[1])
		}
		now := time.Now()
		for _, r := range refunds {
			note := ""
			if r.CutShort(now) {
				note = " (no answer recorded: the request was cut short; check the operator's portal before asking again)"
			}
			fmt.Fprintf(w, "refund\t%s %s by %s at %s %s%s\n", r.ID, r.Status, r.RequestedBy, payment.FormatTime(r.RequestedAt), r.OperatorCode, note)
		}
	})
	return nil
}
