package app_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/app"
	"github.com/momopay/momopay/internal/jobs"
	"github.com/momopay/momopay/internal/operator"
	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
	"github.com/momopay/momopay/internal/operator/moov"
	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/store"
	"github.com/momopay/momopay/internal/team"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testlog"
	"github.com/momopay/momopay/internal/testserver"
)

func initiateAirtel(t *testing.T, a *app.App, merchant, ref, phone string) *payment.Transaction {
	t.Helper()
	tx, err := a.Payments.Initiate(t.Context(), merchant, payment.CreateRequest{
		Reference: ref, Amount: 5000, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: phone,
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// autoRefunds runs the auto-refund jobs queued so far, once each, as the
// payments queue would, and returns the payments they were for.
func autoRefunds(t *testing.T, a *app.App) []string {
	t.Helper()
	rows, err := a.DB.QueryContext(t.Context(), `SELECT args FROM river_job WHERE kind = 'payment_auto_refund' AND state = 'available' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var queued []jobs.AutoRefund
	for rows.Next() {
		var args []byte
		var j jobs.AutoRefund
		if err := rows.Scan(&args); err != nil || json.Unmarshal(args, &j) != nil {
			t.Fatalf("auto-refund job %q: %v", args, err)
		}
		queued = append(queued, j)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range queued {
		if wait, err := a.Payments.AutoRefund(t.Context(), j.MerchantID, j.TransactionID); err != nil || wait != 0 {
			t.Fatalf("auto-refund of %s: %s %v", j.TransactionID, wait, err)
		}
		ids = append(ids, j.TransactionID)
	}
	return ids
}

// TestAutoRefundLateSuccess: a payer who confirms after the payment ended
// TIMEOUT has paid while the merchant was told it failed. With the
// merchant's policy on, the money goes back, through a job committed with
// the late SUCCESS; off (the default), the late SUCCESS is only recorded
// for reconciliation.
func TestAutoRefundLateSuccess(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		a, clk, merchant := openIdle(t, engine)
		if on, err := a.Refunds.AutoRefundLateSuccess(t.Context(), merchant); err != nil || on {
			t.Fatalf("default policy: %v %v, want off", on, err)
		}
		if _, err := a.Refunds.SetAutoRefundLateSuccess(t.Context(), merchant, true); err != nil {
			t.Fatal(err)
		}
		other, err := a.Merchants.Create(t.Context(), "Other", "other@example.com", "correct horse battery", clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		on := initiateAirtel(t, a, merchant, "late-on", "+23560000003")
		off := initiateAirtel(t, a, other.ID, "late-off", "+23560000003")
		clk.Advance(payment.DefaultPendingTTL)
		for _, tx := range []*payment.Transaction{on, off} {
			if _, err := a.Payments.Expire(t.Context(), tx.MerchantID, tx.ID); err != nil {
				t.Fatal(err)
			}
			assertStatus(t, a, tx.MerchantID, tx.ID, payment.StatusTimeout)
			// The payer confirms late.
			got, changed, err := a.AnswerSandboxPayment(t.Context(), tx.MerchantID, tx.ID, true)
			if err != nil || changed || got.Status != payment.StatusTimeout {
				t.Fatalf("late confirmation: %v changed=%v err=%v", got, changed, err)
			}
		}
		// The late SUCCESS only queued the refund; its job makes it.
		if refunds, err := a.Refunds.List(t.Context(), merchant, on.ID); err != nil || len(refunds) != 0 {
			t.Fatalf("refunds before the job ran: %+v %v", refunds, err)
		}
		if ran := autoRefunds(t, a); len(ran) != 2 || !slices.Contains(ran, on.ID) || !slices.Contains(ran, off.ID) {
			t.Fatalf("auto-refund jobs for %v, want one per late SUCCESS", ran)
		}
		refunds, err := a.Refunds.List(t.Context(), merchant, on.ID)
		if err != nil || len(refunds) != 1 || refunds[0].Status != payment.RefundRefunded ||
			refunds[0].RequestedBy != payment.AutoRefundRequester || refunds[0].Amount != 5000 {
			t.Fatalf("policy on: refunds %+v %v", refunds, err)
		}
		if refunds, _ := a.Refunds.List(t.Context(), other.ID, off.ID); len(refunds) != 0 {
			t.Fatalf("policy off: refunds %+v", refunds)
		}
		// The service's own refund is in the merchant's audit log, asked
		// and answered, in its own name; the other merchant's log has none.
		var logged []string
		entries, err := a.AuditLog.List(t.Context(), merchant, time.Time{}, "", 100)
		for _, e := range entries {
			if e.Email == payment.AutoRefundActor.Name && strings.Contains(e.Target, refunds[0].ID) {
				logged = append(logged, e.Action)
			}
		}
		slices.Sort(logged) // the test's clock stands still: both entries have one time
		if err != nil || !slices.Equal(logged, []string{team.ActionRefundAnswered, team.ActionRefundRequested}) {
			t.Errorf("auto-refund in the audit log: %q, %v", logged, err)
		}
		if entries, _ := a.AuditLog.List(t.Context(), other.ID, time.Time{}, "", 100); len(entries) != 0 {
			t.Errorf("the other merchant's audit log: %+v", entries)
		}
		// Several ids at once stay scoped to the merchant asking.
		if refunds, err := a.Refunds.List(t.Context(), other.ID, on.ID, off.ID, "not-an-id"); err != nil || len(refunds) != 0 {
			t.Fatalf("the other merchant reads %+v, %v", refunds, err)
		}
		if refunds, err := a.Refunds.List(t.Context(), merchant, off.ID, on.ID, "not-an-id"); err != nil || len(refunds) != 1 || refunds[0].TransactionID != on.ID {
			t.Fatalf("several ids: %+v, %v", refunds, err)
		}
		cases, _ := a.Cases.List(t.Context())
		late := 0
		for _, c := range cases {
			if c.FinalStatus == payment.StatusTimeout && c.ReportedStatus == payment.StatusSuccess {
				late++
			}
		}
		if late != 2 {
			t.Errorf("%d late SUCCESS cases, want one per payment: %+v", late, cases)
		}
		// The operator's reference came with the late outcome.
		if tx, _ := a.Transactions.Transaction(t.Context(), merchant, on.ID); tx.OperatorRef != airtelsim.AirtelMoneyID(on.InternalRef) {
			t.Errorf("operator reference %q", tx.OperatorRef)
		}
		// A second late report queues no second refund, and the job
		// run again (a retry, a rescue) refunds nothing more.
		if _, _, err := a.AnswerSandboxPayment(t.Context(), merchant, on.ID, true); err != nil {
			t.Fatal(err)
		}
		if wait, err := a.Payments.AutoRefund(t.Context(), merchant, on.ID); err != nil || wait != 0 {
			t.Fatalf("auto-refund run again: %s %v", wait, err)
		}
		var queued int
		if err := a.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM river_job WHERE kind = 'payment_auto_refund'`).Scan(&queued); err != nil || queued != 2 {
			t.Errorf("%d auto-refund jobs after a second late report (%v), want 2", queued, err)
		}
		if refunds, _ := a.Refunds.List(t.Context(), merchant, on.ID); len(refunds) != 1 {
			t.Errorf("second late report: %d refunds", len(refunds))
		}
	})
}

// TestLateCallbackWaitsForNoRefund: Airtel's callback of a late SUCCESS is
// answered without waiting for the auto-refund it calls for, which Airtel
// may take up to its 20 s to answer. Before, the callback made the refund
// itself: here it sat until the refund's answer was lost (UNKNOWN).
func TestLateCallbackWaitsForNoRefund(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		asked := make(chan struct{}, 1)
		answer := make(chan struct{})
		var answered sync.Once
		release := func() { answered.Do(func() { close(answer) }) }
		sim, env := fakeAirtel(t, clk, func(sim http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/payments/refund") {
					select {
					case asked <- struct{}{}:
					default:
					}
					select {
					case <-answer:
					case <-r.Context().Done():
						return
					}
				}
				sim.ServeHTTP(w, r)
			})
		})
		t.Cleanup(release) // before the fake server closes, which waits for its requests
		a := openLive(t, testdb.URL(t, engine), clk, env)
		ctx := t.Context()
		m := liveMerchant(t, a, clk)
		if _, err := a.Refunds.SetAutoRefundLateSuccess(ctx, m, true); err != nil {
			t.Fatal(err)
		}
		tx := lateAirtelSuccess(t, a, sim, clk, m, "late-callback")
		assertStatus(t, a, m, tx.ID, payment.StatusTimeout)
		select {
		case <-asked:
			t.Fatal("the callback asked Airtel for the refund itself")
		default:
		}
		if refunds, err := a.Refunds.List(ctx, m, tx.ID); err != nil || len(refunds) != 0 {
			t.Fatalf("refunds once the callback is answered: %+v %v, want none yet", refunds, err)
		}
		release()
		if ran := autoRefunds(t, a); !slices.Equal(ran, []string{tx.ID}) {
			t.Fatalf("auto-refund jobs for %v, want %s", ran, tx.ID)
		}
		refunds, err := a.Refunds.List(ctx, m, tx.ID)
		if err != nil || len(refunds) != 1 || refunds[0].Status != payment.RefundRefunded {
			t.Fatalf("after the job: %+v %v, want one REFUNDED", refunds, err)
		}
	})
}

// lateAirtelSuccess makes an Airtel payment of merchant end TIMEOUT at its
// expires_at, then has its payer confirm it and Airtel's callback report
// the SUCCESS: a late SUCCESS, whose auto-refund job is then queued.
func lateAirtelSuccess(t *testing.T, a *app.App, sim *airtelsim.Simulator, clk *testserver.Clock, merchant, ref string) *payment.Transaction {
	t.Helper()
	ctx := t.Context()
	tx := initiateAirtel(t, a, merchant, ref, "+23566000000")
	clk.Advance(tx.ExpiresAt.Sub(clk.Now()))
	if _, err := a.Payments.Expire(ctx, merchant, tx.ID); err != nil {
		t.Fatal(err)
	}
	if err := sim.AnswerPayment(ctx, tx.InternalRef, true); err != nil {
		t.Fatal(err)
	}
	paid := operator.Outcome{State: operator.Succeeded, Code: "TS", OperatorRef: airtelsim.AirtelMoneyID(tx.InternalRef)}
	if err := a.Payments.HandleCallback(ctx, payment.OperatorAirtel, operator.Callback{Ref: tx.InternalRef, Outcome: paid}); err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestAutoRefundNotSent: an auto-refund for which Airtel could not be
// reached (here its token endpoint is down) moved no money: it is kept as
// NOT_SENT, the job tries again 1, 2, 4 and 8 minutes later, then leaves
// the case to a person, who can still refund the payment. Before, the
// first such try was UNKNOWN, which blocked every later refund.
func TestAutoRefundNotSent(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		var down atomic.Bool
		var refundCalls atomic.Int64
		sim, env := fakeAirtel(t, clk, func(sim http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/payments/refund") {
					refundCalls.Add(1)
				}
				if down.Load() && strings.HasSuffix(r.URL.Path, "/oauth2/token") {
					http.Error(w, "down", http.StatusServiceUnavailable)
					return
				}
				sim.ServeHTTP(w, r)
			})
		})
		a := openLive(t, testdb.URL(t, engine), clk, env)
		ctx := t.Context()
		m := liveMerchant(t, a, clk)
		if _, err := a.Refunds.SetAutoRefundLateSuccess(ctx, m, true); err != nil {
			t.Fatal(err)
		}
		tx := lateAirtelSuccess(t, a, sim, clk, m, "late-unreachable")

		// The access token of the expiry check's enquiry has expired by
		// the time the refund is made, and a new one cannot be had.
		clk.Advance(3 * time.Minute)
		down.Store(true)
		for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 0} {
			wait, err := a.Payments.AutoRefund(ctx, m, tx.ID)
			if err != nil || wait != want {
				t.Fatalf("try %d with Airtel unreachable: again in %s, %v; want %s", i+1, wait, err, want)
			}
		}
		refunds, err := a.Refunds.List(ctx, m, tx.ID)
		if err != nil || len(refunds) != 5 {
			t.Fatalf("refunds after five tries: %+v %v", refunds, err)
		}
		for _, r := range refunds {
			if r.Status != payment.RefundNotSent || !strings.Contains(r.OperatorDetail, "not sent") {
				t.Errorf("a try with Airtel unreachable: %s %q, want NOT_SENT", r.Status, r.OperatorDetail)
			}
		}
		if n := refundCalls.Load(); n != 0 {
			t.Fatalf("Airtel was asked for %d refunds", n)
		}

		// Airtel is back: a person refunds the payment a while later;
		// nothing stands in the way, and it is refunded once.
		down.Store(false)
		clk.Advance(time.Minute)
		r, err := a.Payments.Refund(ctx, m, tx.ID, "ops", payment.Actor{Name: "ops"})
		if err != nil || r.Status != payment.RefundRefunded {
			t.Fatalf("refund by hand once Airtel is back: %+v %v", r, err)
		}
		if _, err := a.Payments.Refund(ctx, m, tx.ID, "ops", payment.Actor{Name: "ops"}); !errors.Is(err, payment.ErrRefundExists) {
			t.Errorf("a second refund after the one made: %v", err)
		}
	})
}

// TestLateFailureNamesNoRefundTarget: after TIMEOUT, a late FAILED report
// naming some Airtel id, then the payer's late SUCCESS: the refund goes to
// the payment Airtel reported paid. Before, the FAILED report's id was
// kept as the payment's and the auto-refund was sent for it.
func TestLateFailureNamesNoRefundTarget(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		a, clk, merchant := openIdle(t, engine)
		if _, err := a.Refunds.SetAutoRefundLateSuccess(t.Context(), merchant, true); err != nil {
			t.Fatal(err)
		}
		tx := initiateAirtel(t, a, merchant, "late-failed-then-paid", "+23560000003")
		clk.Advance(payment.DefaultPendingTTL)
		if _, err := a.Payments.Expire(t.Context(), merchant, tx.ID); err != nil {
			t.Fatal(err)
		}
		failed := operator.Outcome{State: operator.Failed, Reason: operator.ReasonOther, Code: "TF", OperatorRef: "AM-SOMEONE-ELSE"}
		if err := a.Payments.SettleByRef(t.Context(), payment.OperatorAirtel, tx.InternalRef, failed, payment.SourceCallback); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.Transactions.Transaction(t.Context(), merchant, tx.ID); got.OperatorRef != "" {
			t.Errorf("after a late FAILED: operator reference %q, want none", got.OperatorRef)
		}
		if _, _, err := a.AnswerSandboxPayment(t.Context(), merchant, tx.ID, true); err != nil {
			t.Fatal(err)
		}
		autoRefunds(t, a)
		paid := airtelsim.AirtelMoneyID(tx.InternalRef)
		if got, _ := a.Transactions.Transaction(t.Context(), merchant, tx.ID); got.OperatorRef != paid {
			t.Errorf("after the late SUCCESS: operator reference %q, want %q", got.OperatorRef, paid)
		}
		refunds, err := a.Refunds.List(t.Context(), merchant, tx.ID)
		if err != nil || len(refunds) != 1 || refunds[0].Status != payment.RefundRefunded || refunds[0].OperatorRef != paid {
			t.Errorf("refunds %+v %v, want one REFUNDED of %s", refunds, err, paid)
		}
	})
}

// TestSandboxAirtelByHand: the CLI plays the payer through the Airtel
// simulator; the refusal's code and reason are kept and shown by
// "transaction show"; a refund needs a paid payment and happens once.
func TestSandboxAirtelByHand(t *testing.T) {
	t.Parallel()
	db := migrated(t, "sqlite")
	env := map[string]string{"MOMOPAY_DATABASE_URL": db, "USER": "tester"}
	merchant := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "S", "--email", "s@example.td", "--password-stdin")["id"].(string)
	a, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	refused := initiateAirtel(t, a, merchant, "hand-1", "+23566000000")
	paid := initiateAirtel(t, a, merchant, "hand-2", "+23566000001")
	disowned := initiateAirtel(t, a, merchant, "hand-3", "+23566000002")
	a.Close()

	if out, _, err := cliRun(t, env, "", "sandbox", "refuse", refused.ID); err != nil || !strings.Contains(out, "is now FAILED (refused)") {
		t.Fatalf("sandbox refuse: %v %q", err, out)
	}
	shown := cliJSON(t, env, "", "transaction", "show", refused.ID)
	if shown["failure_reason"] != "refused" || shown["operator_code"] != "DP00800001008" || shown["status"] != "FAILED" {
		t.Errorf("transaction show: %v", shown)
	}
	if out, _, _ := cliRun(t, env, "", "transaction", "show", refused.ID); !strings.Contains(out, "failure_reason  refused") {
		t.Errorf("transaction show, text: %q", out)
	}
	if _, _, err := cliRun(t, env, "", "refund", refused.ID); err == nil || !strings.Contains(err.Error(), "nothing to refund") {
		t.Errorf("refund of a FAILED payment: %v", err)
	}

	if out, _, err := cliRun(t, env, "", "sandbox", "confirm", paid.ID); err != nil || !strings.Contains(out, "is now SUCCESS") {
		t.Fatalf("sandbox confirm: %v %q", err, out)
	}
	// Who asked is kept and shown: it must be text, as a merchant's name.
	for _, by := range []string{"a\xff", "a\x00b", strings.Repeat("x", 201)} {
		if _, _, err := cliRun(t, env, "", "refund", paid.ID, "--by", by); err == nil || !strings.Contains(err.Error(), "--by must be text") {
			t.Errorf("refund --by %q: %v", by, err)
		}
	}
	// Without --by, the requester is who ran the command, as the audit
	// log names them (user@host).
	host, _ := os.Hostname()
	r := cliJSON(t, env, "", "refund", paid.ID)
	if r["status"] != "REFUNDED" || r["requested_by"] != "tester@"+host || r["amount"] != float64(5000) {
		t.Errorf("refund: %v", r)
	}
	if _, _, err := cliRun(t, env, "", "refund", paid.ID); err == nil || !strings.Contains(err.Error(), "already has a refund") {
		t.Errorf("second refund: %v", err)
	}
	if shown := cliJSON(t, env, "", "transaction", "show", paid.ID); len(shown["refunds"].([]any)) != 1 {
		t.Errorf("refunds shown: %v", shown["refunds"])
	}
	if out, _, err := cliRun(t, env, "", "merchant", "auto-refund", "--merchant", merchant, "on"); err != nil || !strings.Contains(out, "refunded automatically") {
		t.Errorf("merchant auto-refund on: %v %q", err, out)
	}
	// The refund, and only the one that was made, is in the audit log:
	// asked, then answered, in the name of the command line's user.
	refundLog := func() (got []string) {
		for _, e := range auditEntries(t, db, merchant) {
			if e.Action == team.ActionRefundRequested || e.Action == team.ActionRefundAnswered {
				if !strings.HasPrefix(e.Email, "command line: tester@") || e.Address != "command line" {
					t.Errorf("refund entry by %q from %q", e.Email, e.Address)
				}
				got = append(got, e.Action+" "+e.Target)
			}
		}
		return got
	}
	want := []string{ // oldest first
		fmt.Sprintf("%s transaction %s: refund %s of 5000 XAF asked of the operator (asked by tester@%s)", team.ActionRefundRequested, paid.ID, r["id"], host),
		fmt.Sprintf("%s transaction %s: refund %s of 5000 XAF, REFUNDED (operator code %s)", team.ActionRefundAnswered, paid.ID, r["id"], r["operator_code"]),
	}
	if got := refundLog(); !slices.Equal(got, want) {
		t.Errorf("refunds in the audit log:\n%q\nwant\n%q", got, want)
	}
	// A refund the operator refuses (here, of a payment it then reported
	// refused) prints its answer and exits non-zero: a script must not
	// take it for money returned.
	cliRun(t, env, "", "sandbox", "confirm", disowned.ID)
	cliRun(t, env, "", "sandbox", "refuse", disowned.ID)
	out, _, err := cliRun(t, env, "", "refund", disowned.ID, "--json")
	if err == nil || !strings.Contains(err.Error(), "refused the refund") || !strings.Contains(out, `"status": "REFUSED"`) {
		t.Errorf("a refused refund: %v, output %q; want an error and the JSON answer", err, out)
	}
	if got := refundLog(); len(got) != 4 || !strings.Contains(got[3], disowned.ID) || !strings.Contains(got[3], ", REFUSED (operator code ") {
		t.Errorf("a refused refund in the audit log: %q", got)
	}
}

// TestLiveConfiguration: live mode builds only the operators its
// environment configures (a payment for another is 422 saying so), names
// every missing variable of a half-configured one, refuses an operator URL
// that is not https, and commits SQLite with synchronous=FULL. Serving
// without an Airtel callback secret warns that callbacks cannot be
// authenticated; an administrative command, which reads no callbacks, does
// not.
func TestLiveConfiguration(t *testing.T) {
	t.Parallel()
	quiet := quietLog
	env := map[string]string{
		"MOMOPAY_AIRTEL_BASE_URL": "https://openapiuat.airtel.africa", "MOMOPAY_AIRTEL_CLIENT_ID": "id", "MOMOPAY_AIRTEL_CLIENT_SECRET": "secret",
	}
	dbURL := testdb.URL(t, "sqlite")
	var served, administered testlog.Buffer
	a, err := app.Open(t.Context(), app.Config{DatabaseURL: dbURL, Mode: app.ModeLive, Getenv: func(k string) string { return env[k] }, RequireOperator: true,
		Logger: slog.New(slog.NewTextHandler(&served, nil)), SessionSecret: liveSessionSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	admin, err := app.Open(t.Context(), app.Config{DatabaseURL: dbURL, Mode: app.ModeLive, Getenv: func(k string) string { return env[k] },
		Logger: slog.New(slog.NewTextHandler(&administered, nil)), ExistingDatabase: true})
	if err != nil {
		t.Fatal(err)
	}
	admin.Close()
	const warning = "MOMOPAY_AIRTEL_CALLBACK_SECRET is not set"
	if !strings.Contains(served.String(), warning) || strings.Contains(administered.String(), warning) {
		t.Errorf("the callback secret's warning: serving %q, administering %q; want it when serving only", served.String(), administered.String())
	}
	var sync int
	if err := a.DB.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&sync); err != nil || sync != 2 {
		t.Errorf("PRAGMA synchronous = %d (%v), want 2 (FULL)", sync, err)
	}
	m, err := a.Merchants.Create(t.Context(), "Live", "live@example.com", "correct horse battery", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Payments.Initiate(t.Context(), m.ID, payment.CreateRequest{Reference: "moov-1", Amount: 1000, Currency: "XAF", Operator: "MOOV", PhoneNumber: "+23566000000"})
	var perr *payment.Error
	if !errors.As(err, &perr) || perr.Code != payment.EUNPROCESSABLE || !strings.Contains(perr.Message, "not configured") {
		t.Errorf("MOOV unconfigured: %v", err)
	}

	half := map[string]string{"MOMOPAY_AIRTEL_CLIENT_ID": "id", "MOMOPAY_MOOV_URL": "https://moov.example"}
	_, err = app.Open(t.Context(), app.Config{DatabaseURL: testdb.URL(t, "sqlite"), Mode: app.ModeLive, Getenv: func(k string) string { return half[k] }, Logger: quiet, SessionSecret: liveSessionSecret})
	for _, name := range []string{"MOMOPAY_AIRTEL_BASE_URL", "MOMOPAY_AIRTEL_CLIENT_SECRET", "MOMOPAY_MOOV_USERNAME", "MOMOPAY_MOOV_PASSWORD", "MOMOPAY_MOOV_KEY"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("half-configured: %v, want %s named", err, name)
		}
	}
	// Live mode reaches operators over https only: their credentials
	// travel in every request, and their answers settle payments.
	for _, plain := range []struct {
		name string // the variable holding the URL
		env  map[string]string
	}{
		{"MOMOPAY_AIRTEL_BASE_URL", map[string]string{"MOMOPAY_AIRTEL_BASE_URL": "http://openapiuat.airtel.africa", "MOMOPAY_AIRTEL_CLIENT_ID": "id", "MOMOPAY_AIRTEL_CLIENT_SECRET": "secret"}},
		{"MOMOPAY_MOOV_URL", map[string]string{"MOMOPAY_MOOV_URL": "http://moov.example/MerchantService", "MOMOPAY_MOOV_TOKEN": "a-moov-token"}},
		{"MOMOPAY_MOOV_URL", map[string]string{"MOMOPAY_MOOV_URL": "HTTP://moov.example/MerchantService", "MOMOPAY_MOOV_TOKEN": "a-moov-token"}},
	} {
		_, err = app.Open(t.Context(), app.Config{DatabaseURL: testdb.URL(t, "sqlite"), Mode: app.ModeLive, Getenv: func(k string) string { return plain.env[k] },
			RequireOperator: true, Logger: quiet, SessionSecret: liveSessionSecret})
		if err == nil || !strings.Contains(err.Error(), plain.name) || !strings.Contains(err.Error(), "is not an https URL") {
			t.Errorf("%s=%s: %v, want it refused", plain.name, plain.env[plain.name], err)
		}
	}
	sandbox, err := app.Open(t.Context(), app.Config{DatabaseURL: testdb.URL(t, "sqlite"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer sandbox.Close()
	if err := sandbox.DB.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&sync); err != nil || sync != 1 {
		t.Errorf("sandbox: PRAGMA synchronous = %d (%v), want 1 (NORMAL)", sync, err)
	}
}

// TestDroppedPushSettlesByPolling: live mode against an Airtel that takes
// the push but whose answer is lost (the connection drops): the payment is
// created PENDING, not refused, and the enquiries settle it; a push Airtel
// refuses with HTTP 200 and success=false frees the reference (503).
func TestDroppedPushSettlesByPolling(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		sim, env := fakeAirtel(t, clk, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/merchant/v1/payments/" && strings.Contains(readAndRestore(r), "66000001") {
					h.ServeHTTP(httptest.NewRecorder(), r)
					conn, _, _ := w.(http.Hijacker).Hijack()
					conn.Close()
					return
				}
				h.ServeHTTP(w, r)
			})
		})
		a := openLive(t, testdb.URL(t, engine), clk, env)
		m := liveMerchant(t, a, clk)
		tx := initiateAirtel(t, a, m, "dropped", "+23566000001")
		if tx.Status != payment.StatusPending {
			t.Fatalf("dropped push: %s", tx.Status)
		}
		if err := sim.AnswerPayment(t.Context(), tx.InternalRef, true); err != nil {
			t.Fatalf("Airtel never got the push: %v", err)
		}
		pollToEnd(t, a, clk, m, tx.ID)
		assertStatus(t, a, m, tx.ID, payment.StatusSuccess)

		_, err := a.Payments.Initiate(t.Context(), m, payment.CreateRequest{Reference: "refused", Amount: 5000, Currency: "XAF", Operator: "AIRTEL", PhoneNumber: "+23560000005"})
		if payment.ErrorCode(err) != payment.EUNAVAILABLE {
			t.Fatalf("refused push: %v", err)
		}
		if again := initiateAirtel(t, a, m, "refused", "+23566000002"); again.Reference != "refused" {
			t.Fatalf("the refused reference was not free: %+v", again)
		}
	})
}

// readAndRestore returns r's body and puts it back for the next reader.
func readAndRestore(r *http.Request) string {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return string(b)
}

// TestFailedLastEnquiryIsAskedAgain: live mode against an Airtel whose
// enquiries fail at expires_at. A payer who confirmed just before expiry
// is not reported TIMEOUT for that moment's failure: the expiry check asks
// again, and settles SUCCESS once Airtel answers. An Airtel that stays
// unreachable gets TIMEOUT, within the grace.
func TestFailedLastEnquiryIsAskedAgain(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		var failing atomic.Bool
		sim, env := fakeAirtel(t, clk, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if failing.Load() && strings.HasPrefix(r.URL.Path, "/standard/v1/payments/") {
					http.Error(w, "bad gateway", http.StatusBadGateway)
					return
				}
				h.ServeHTTP(w, r)
			})
		})
		a := openLive(t, testdb.URL(t, engine), clk, env)
		m := liveMerchant(t, a, clk)
		ctx := t.Context()
		paid := initiateAirtel(t, a, m, "paid-late", "+23566000001")
		unknown := initiateAirtel(t, a, m, "never-known", "+23566000002")
		clk.Advance(paid.ExpiresAt.Sub(clk.Now()) - time.Second)
		if err := sim.AnswerPayment(ctx, paid.InternalRef, true); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)

		failing.Store(true)
		for _, tx := range []*payment.Transaction{paid, unknown} {
			if wait, err := a.Payments.Expire(ctx, m, tx.ID); err != nil || wait <= 0 {
				t.Fatalf("expiry check with the enquiry failing: wait %s, %v; want a retry", wait, err)
			}
			assertStatus(t, a, m, tx.ID, payment.StatusPending)
		}
		failing.Store(false)
		clk.Advance(3 * time.Second)
		if wait, err := a.Payments.Expire(ctx, m, paid.ID); err != nil || wait != 0 {
			t.Fatalf("expiry check once Airtel answers: wait %s, %v", wait, err)
		}
		assertStatus(t, a, m, paid.ID, payment.StatusSuccess)

		failing.Store(true)
		clk.Advance(13 * time.Second) // 16 s past expires_at: the grace is over
		if wait, err := a.Payments.Expire(ctx, m, unknown.ID); err != nil || wait != 0 {
			t.Fatalf("expiry check after the grace: wait %s, %v", wait, err)
		}
		assertStatus(t, a, m, unknown.ID, payment.StatusTimeout)
	})
}

// TestDeclinedPushIsFailed: live mode against an Airtel that answers the
// push itself with a payer's failure (DP00800001007, not enough balance,
// even under result code ESB000011). The payment is kept: created PENDING
// and FAILED at once with its reason, as the contract has a refusal for
// insufficient balance; and however many payers are declined, the circuit
// breaker stays closed for the next payer.
func TestDeclinedPushIsFailed(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		_, env := fakeAirtel(t, clk, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/merchant/v1/payments/" && strings.Contains(readAndRestore(r), "66000009") {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"status":{"code":"200","message":"Insufficient balance","result_code":"ESB000011","response_code":"DP00800001007","success":false}}`)
					return
				}
				h.ServeHTTP(w, r)
			})
		})
		a := openLive(t, testdb.URL(t, engine), clk, env)
		m := liveMerchant(t, a, clk)
		for i := range 8 {
			tx := initiateAirtel(t, a, m, fmt.Sprintf("declined-%d", i), "+23566000009")
			if tx.Status != payment.StatusPending {
				t.Fatalf("declined push answered %s, want PENDING (the contract's 201)", tx.Status)
			}
			got, err := a.Payments.Get(t.Context(), m, tx.ID)
			if err != nil || got.Status != payment.StatusFailed || got.FailureReason != "insufficient_balance" || got.OperatorCode != "DP00800001007" {
				t.Fatalf("after a declined push: %+v (%v), want FAILED insufficient_balance DP00800001007", got, err)
			}
		}
		if tx := initiateAirtel(t, a, m, "healthy", "+23566000001"); tx.Status != payment.StatusPending {
			t.Fatalf("the next payer: %s", tx.Status)
		}
	})
}

// TestServedLiveRefusesSandbox: a database that has served in live mode
// is refused in sandbox mode, so an administrative command run against it
// without MOMOPAY_MODE cannot settle a real payment through the simulator
// ("sandbox confirm" made a live payment SUCCESS with no money taken). In
// live mode the same commands work.
func TestServedLiveRefusesSandbox(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		db := testdb.URL(t, engine)
		_, env := fakeAirtel(t, clk, nil)
		env["MOMOPAY_DATABASE_URL"] = db
		live := openLive(t, db, clk, env)
		m := liveMerchant(t, live, clk)
		live.Close()

		if _, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Logger: quietLog}); !errors.Is(err, store.ErrServedLive) {
			t.Fatalf("sandbox serve on a live database: %v, want ErrServedLive", err)
		}
		if r, _, _ := configCheck(t, nil, append(anyPorts, "--db", db)...); len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "--db: this database has served in live mode") {
			t.Errorf("config check in sandbox mode on a live database: %q", r.Problems)
		}
		for _, args := range [][]string{{"sandbox", "confirm", "01a216b5-d255-7770-928b-463c7480d930"}, {"merchant", "list"}} {
			if _, _, err := cliRun(t, env, "", args...); err == nil || !strings.Contains(err.Error(), "--mode live (or MOMOPAY_MODE=live)") {
				t.Errorf("%v without MOMOPAY_MODE: %v, want the live database refused", args, err)
			}
		}
		// --mode says it as the variable does; a mode that is neither
		// is refused, not taken for sandbox.
		if out, _, err := cliRun(t, env, "", "merchant", "list", "--mode", "live"); err != nil || !strings.Contains(out, m) {
			t.Errorf("merchant list --mode live: %v %q", err, out)
		}
		if _, _, err := cliRun(t, env, "", "merchant", "list", "--mode", "Live"); err == nil || !strings.Contains(err.Error(), `--mode "Live" is not a mode`) {
			t.Errorf("merchant list --mode Live: %v, want refused", err)
		}
		env["MOMOPAY_MODE"] = "live"
		if out, _, err := cliRun(t, env, "", "merchant", "list"); err != nil || !strings.Contains(out, m) {
			t.Errorf("merchant list in live mode: %v %q", err, out)
		}
	})
}

// TestUnmarkedSandboxRefusesLive: a database without a mode that holds
// the demo merchant, as one a sandbox serve of a build from before the
// mark served, is refused in live mode (the demo merchant's key, printed in
// clear, would take real money), by serve and the administrative commands
// alike, and config check says so. One that holds merchants, keys and
// payments but no demo merchant, as live mode left its databases before
// the mark (and as migrate and the administrative commands prepare one),
// goes live. A marked one is refused the same way (TestServedSandbox-
// RefusesLive, with the binary).
func TestUnmarkedSandboxRefusesLive(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		_, env := fakeAirtel(t, clk, nil)
		unmarked := func(demo bool) string {
			db := testdb.URL(t, engine)
			a, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Logger: quietLog})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			m := liveMerchant(t, a, clk)
			initiateAirtel(t, a, m, "before-the-mark", "+23560000001")
			if demo {
				if _, err := a.Merchants.Create(t.Context(), "Demo Merchant", store.DemoMerchantEmail, "a demo password", clk.Now()); err != nil {
					t.Fatal(err)
				}
			}
			return db
		}
		openLive(t, unmarked(false), clk, env).Close()

		db := unmarked(true)
		for _, required := range []bool{true, false} {
			_, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Mode: app.ModeLive, Now: clk.Now, SessionSecret: liveSessionSecret,
				Getenv: func(k string) string { return env[k] }, RequireOperator: required, Logger: quietLog})
			if !errors.Is(err, store.ErrServedSandbox) {
				t.Fatalf("live mode (serving: %v) on the sandbox's demo merchant: %v, want ErrServedSandbox", required, err)
			}
		}
		// config check says so, as it says the converse of a live one.
		checkEnv := map[string]string{"MOMOPAY_SESSION_SECRET": string(liveSessionSecret)}
		maps.Copy(checkEnv, env)
		r, _, _ := configCheck(t, checkEnv, append(anyPorts, "--mode", "live", "--db", db)...)
		if len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "--db: this database has served in sandbox mode") {
			t.Errorf("config check --mode live on the sandbox's demo merchant: %q", r.Problems)
		}
		// Refused, it was not marked live: the sandbox still opens it.
		again, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Logger: quietLog})
		if err != nil {
			t.Fatalf("sandbox after the refusal: %v", err)
		}
		again.Close()
	})
}

// TestMoovAskedByItsReferenceAnywhere: live mode against a Moov that finds
// payments by the referenceid it answered to the push, not by our
// internal_ref. The referenceid is kept with the transaction, so another
// instance (or this one restarted), whose adapter never saw the push,
// polls the payment to SUCCESS. Kept in one process's memory only, the
// payment would have ended TIMEOUT while the payer had paid.
func TestMoovAskedByItsReferenceAnywhere(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		_, env := fakeMoov(t, clk, func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(readAndRestore(r), "<transid>SERVICE-") {
					http.Error(w, "no such transaction", http.StatusInternalServerError)
					return
				}
				h.ServeHTTP(w, r)
			})
		})
		db := testdb.URL(t, engine)
		pusher := openLive(t, db, clk, env)
		m := liveMerchant(t, pusher, clk)
		tx, err := pusher.Payments.Initiate(t.Context(), m, payment.CreateRequest{
			Reference: "moov-1", Amount: 5000, Currency: "XAF", Operator: "MOOV", PhoneNumber: moov.PhoneSuccess})
		if err != nil {
			t.Fatal(err)
		}
		other := openLive(t, db, clk, env)
		pollToEnd(t, other, clk, m, tx.ID)
		assertStatus(t, other, m, tx.ID, payment.StatusSuccess)
	})
}

// TestLateSuccessAfterTimeout: a Moov payer who confirms after the payment
// ended TIMEOUT has paid, and Moov sends no callback to say so. The late
// checks scheduled with the TIMEOUT ask Moov again: the payment stays
// TIMEOUT (final) and a reconciliation case records the success. Before
// the payer answers, a check only says when to ask next; a payment that
// did not end TIMEOUT gets no check.
func TestLateSuccessAfterTimeout(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		clk := liveClock()
		sim, env := fakeMoov(t, clk, nil)
		a := openLive(t, testdb.URL(t, engine), clk, env)
		ctx := t.Context()
		m := liveMerchant(t, a, clk)
		initiate := func(ref string) *payment.Transaction {
			tx, err := a.Payments.Initiate(ctx, m, payment.CreateRequest{Reference: ref, Amount: 5000, Currency: "XAF", Operator: "MOOV", PhoneNumber: "+23566000000"})
			if err != nil {
				t.Fatal(err)
			}
			return tx
		}
		late, paidInTime := initiate("late"), initiate("in-time")
		if err := sim.AnswerPayment(ctx, paidInTime.InternalRef, true); err != nil {
			t.Fatal(err)
		}
		clk.Advance(late.ExpiresAt.Sub(clk.Now()))
		for _, tx := range []*payment.Transaction{late, paidInTime} {
			if wait, err := a.Payments.Expire(ctx, m, tx.ID); err != nil || wait != 0 {
				t.Fatalf("expiry check: %s %v", wait, err)
			}
		}
		assertStatus(t, a, m, late.ID, payment.StatusTimeout)
		assertStatus(t, a, m, paidInTime.ID, payment.StatusSuccess)
		var checks int
		if err := a.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = 'payment_late_check'`).Scan(&checks); err != nil || checks != 1 {
			t.Fatalf("%d late checks scheduled (%v), want one, for the TIMEOUT", checks, err)
		}

		clk.Advance(payment.LateCheckAfter[0])
		if wait, err := a.Payments.LateCheck(ctx, m, late.ID); err != nil || wait != payment.LateCheckAfter[1]-payment.LateCheckAfter[0] {
			t.Fatalf("late check with no answer yet: next in %s (%v), want at the next slot", wait, err)
		}
		if err := sim.AnswerPayment(ctx, late.InternalRef, true); err != nil {
			t.Fatal(err)
		}
		clk.Advance(payment.LateCheckAfter[1] - payment.LateCheckAfter[0])
		if wait, err := a.Payments.LateCheck(ctx, m, late.ID); err != nil || wait != 0 {
			t.Fatalf("late check after the payer paid: next in %s (%v), want done", wait, err)
		}
		assertStatus(t, a, m, late.ID, payment.StatusTimeout)
		cases, err := a.Cases.ForMerchant(ctx, m, false)
		if err != nil || len(cases) != 1 || cases[0].TransactionID != late.ID || cases[0].ReportedStatus != payment.StatusSuccess {
			t.Fatalf("reconciliation cases: %+v (%v), want the late SUCCESS of %s", cases, err, late.ID)
		}
		// The same late outcome heard again (a person asks the
		// operator) is the same case; the timeline keeps both reports.
		if _, _, err := a.Payments.Enquire(ctx, m, late.ID, payment.SourcePoll); err != nil {
			t.Fatal(err)
		}
		if cases, err := a.Cases.ForMerchant(ctx, m, false); err != nil || len(cases) != 1 {
			t.Errorf("the late SUCCESS heard twice: %d cases (%v), want one", len(cases), err)
		}
		events, err := a.Transactions.Timeline(ctx, m, late.ID)
		reports := 0
		for _, e := range events {
			if e.Kind == payment.EventLateOutcome {
				reports++
			}
		}
		if err != nil || reports != 2 {
			t.Errorf("the timeline has %d late outcomes (%v), want both reports", reports, err)
		}
	})
}

// TestCutShortRefundShown: a refund still REQUESTED minutes after it was
// asked (its process stopped before recording the answer) is shown by
// "transaction show" as cut short, to be checked in the operator's portal,
// and still blocks a second refund; one asked just now is not.
func TestCutShortRefundShown(t *testing.T) {
	t.Parallel()
	db := migrated(t, "sqlite")
	env := map[string]string{"MOMOPAY_DATABASE_URL": db}
	merchant := cliJSON(t, env, "correct horse battery\n", "merchant", "create", "--name", "S", "--email", "s@example.td", "--password-stdin")["id"].(string)
	a, err := app.Open(t.Context(), app.Config{DatabaseURL: db, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	old, fresh := initiateAirtel(t, a, merchant, "cut-1", "+23566000001"), initiateAirtel(t, a, merchant, "cut-2", "+23566000001")
	for _, tx := range []*payment.Transaction{old, fresh} {
		if _, _, err := a.AnswerSandboxPayment(t.Context(), merchant, tx.ID, true); err != nil {
			t.Fatal(err)
		}
	}
	for tx, asked := range map[string]time.Time{old.ID: time.Now().Add(-5 * time.Minute), fresh.ID: time.Now()} {
		if err := a.Refunds.StartRefund(t.Context(), &payment.Refund{ID: uuid.NewString(), MerchantID: merchant, TransactionID: tx,
			Amount: 5000, RequestedBy: "ops", Status: payment.RefundRequested, RequestedAt: asked}); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	const cut = "the request was cut short; check the operator's portal"
	if out, _, err := cliRun(t, env, "", "transaction", "show", old.ID); err != nil || !strings.Contains(out, "REQUESTED by ops") || !strings.Contains(out, cut) {
		t.Errorf("transaction show, a refund asked 5 minutes ago: %v\n%s", err, out)
	}
	if out, _, err := cliRun(t, env, "", "transaction", "show", fresh.ID); err != nil || !strings.Contains(out, "REQUESTED by ops") || strings.Contains(out, cut) {
		t.Errorf("transaction show, a refund asked just now: %v\n%s", err, out)
	}
	if _, _, err := cliRun(t, env, "", "refund", old.ID); err == nil || !strings.Contains(err.Error(), "already has a refund under way or done") {
		t.Errorf("a refund after one cut short: %v", err)
	}
}
