package client_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/momopay/momopay/client"
)

// A webhook secret as the dashboard shows one: 32 random bytes in base64
// (fictitious).
const exampleSecret = "whsec_qUqBjS7ibBFNoXjkh11l7gsl6mH9rqTTMYKxl/O3baw="

const exampleBody = `{"event":"transaction.success","data":{"id":"5b0c8c1e-4c37-4b5e-9d1e-0f3c2a7d9e10",` +
	`"reference":"order-1042","internal_ref":"SERVICE-7F3K9Q2M","amount":2500,"currency":"XAF",` +
	`"operator":"AIRTEL","phone_number":"+23566000000","description":null,"status":"SUCCESS",` +
	`"created_at":"2026-11-02T09:30:00.000000Z","updated_at":"2026-11-02T09:30:41.000000Z"},"timestamp":"2026-11-02T09:30:41.000000Z"}`

// sign computes X-Service-Signature as momopay does, so the examples run
// without a server.
func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// deliveryHeaders are the signature headers momopay sends with a delivery
// signed at at: X-Service-Signature, and the Standard Webhooks trio, which
// VerifyWebhook requires.
func deliveryHeaders(secret, id, body string, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + body))
	h := http.Header{}
	h.Set("X-Service-Signature", sign(secret, body))
	h.Set("X-Service-Delivery-Id", id)
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	return h
}

// Example is the quick start of the README, which shows this body as a
// complete program (TestReadmeShowsTheExamples keeps the two identical, and
// TestQuickstartAgainstServer runs it against a real server). It requests a
// payment from a sandbox payer who confirms after about 2 seconds, waits for
// the answer, and adds up today's successful payments. It needs a momopay at
// MOMOPAY_URL and an API key in MOMOPAY_API_KEY.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(os.Getenv("MOMOPAY_API_KEY"), client.WithBaseURL(os.Getenv("MOMOPAY_URL")))

	order := client.CreateTransactionParams{
		Reference:   "order-1001", // your order id: one payment per reference, ever
		Amount:      1500,         // whole XAF, 100 to 10,000,000
		Operator:    client.OperatorAirtel,
		PhoneNumber: "+23560000001", // sandbox payer who confirms after about 2 s
		Description: "2 x coffee",
	}
	tx, err := c.CreateTransaction(ctx, order)
	var apiErr *client.Error
	switch {
	case errors.Is(err, client.ErrDuplicateReference) && errors.As(err, &apiErr):
		// This reference was used before: carry on with that payment only if
		// it is this same order, never with one for another amount or payer.
		tx, err = c.GetTransaction(ctx, apiErr.ExistingTransactionID)
		if err == nil && (tx.Amount != order.Amount || tx.Currency != client.CurrencyXAF ||
			tx.Operator != order.Operator || tx.PhoneNumber != order.PhoneNumber) {
			log.Fatalf("%s is already a payment of %d %s from %s, not this order", tx.Reference, tx.Amount, tx.Currency, tx.PhoneNumber)
		}
	case errors.Is(err, client.ErrValidation) && errors.As(err, &apiErr):
		log.Fatalf("refused: %v", apiErr.Fields) // e.g. map[phone_number:must be +235 followed by 8 digits]
	}
	if err != nil {
		log.Fatal(err) // the message ends with the request id to quote
	}
	fmt.Println(tx.Reference, tx.Status)

	// A real shop learns the outcome from its webhook; polling keeps this
	// example self-contained.
	for !tx.Status.Final() {
		time.Sleep(time.Second)
		if tx, err = c.GetTransaction(ctx, tx.ID); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(tx.Reference, tx.Status)

	// Every successful payment since midnight UTC, page after page.
	var total int64
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for t, err := range c.AllTransactions(ctx, client.ListParams{Status: client.StatusSuccess, From: today}) {
		if err != nil {
			log.Fatal(err)
		}
		total += t.Amount
	}
	fmt.Println("collected today:", total, "XAF")
}

// Example_webhookReceiver is the webhook receiver of the README, shown there
// as a complete program. It never returns, so it is compiled, not run;
// WebhookHandler itself is tested against real deliveries.
func Example_webhookReceiver() {
	secret := os.Getenv("MOMOPAY_WEBHOOK_SECRET") // whsec_..., shown once when the endpoint is created
	seen := client.NewMemoryDeliveryStore()       // keep delivery ids in your database in production

	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/momopay", client.WebhookHandler(secret, seen,
		func(ctx context.Context, ev *client.Event) error {
			if ev.Test {
				return nil // transaction.test carries fictitious data
			}
			log.Printf("%s: order %s is %s", ev.Event, ev.Data.Reference, ev.Data.Status)
			return nil // an error answers 500 and momopay tries again later
		}))
	log.Fatal(http.ListenAndServe("127.0.0.1:8000", mux))
}

func ExampleVerifyWebhook() {
	// In a real receiver, body is the raw r.Body and h is r.Header.
	body := []byte(exampleBody)
	h := deliveryHeaders(exampleSecret, "0d6c3b8e-2f7a-4f55-8a51-93a1c1b0f5aa", exampleBody, time.Now())

	ev, err := client.VerifyWebhook(exampleSecret, body, h)
	if err != nil {
		fmt.Println("reject:", err) // answer 401
		return
	}
	fmt.Println(ev.Event, ev.Data.Reference, ev.Data.Amount, ev.Data.Currency, ev.Data.Status)

	// One changed byte and the delivery is refused.
	tampered := []byte(strings.Replace(exampleBody, "2500", "9500", 1))
	_, err = client.VerifyWebhook(exampleSecret, tampered, h)
	fmt.Println(errors.Is(err, client.ErrInvalidSignature))
	// Output:
	// transaction.success order-1042 2500 XAF SUCCESS
	// true
}

func ExampleVerifyWebhookAt() {
	// momopay also sends the Standard Webhooks headers, which sign a
	// timestamp: a delivery captured and replayed later is refused.
	signedAt := time.Date(2026, 11, 2, 9, 30, 41, 0, time.UTC)
	h := deliveryHeaders(exampleSecret, "0d6c3b8e-2f7a-4f55-8a51-93a1c1b0f5aa", exampleBody, signedAt)

	_, err := client.VerifyWebhookAt(exampleSecret, []byte(exampleBody), h, signedAt.Add(30*time.Second), 0)
	fmt.Println("30 seconds later:", err)
	_, err = client.VerifyWebhookAt(exampleSecret, []byte(exampleBody), h, signedAt.Add(time.Hour), 0)
	fmt.Println("an hour later:", errors.Is(err, client.ErrTimestampTooOld))
	// Output:
	// 30 seconds later: <nil>
	// an hour later: true
}

func ExampleWebhookHandler() {
	store := client.NewMemoryDeliveryStore() // use your database in production
	h := client.WebhookHandler(exampleSecret, store, func(ctx context.Context, ev *client.Event) error {
		if ev.Test {
			return nil // fictitious data: never settle an order on it
		}
		fmt.Println("settle", ev.Data.Reference, "as", ev.Data.Status)
		return nil // an error answers 500, and momopay sends the event again
	})
	// http.Handle("/webhooks/momopay", h)

	// The same delivery arriving twice is processed once.
	for range 2 {
		r := httptest.NewRequest(http.MethodPost, "/webhooks/momopay", strings.NewReader(exampleBody))
		r.Header = deliveryHeaders(exampleSecret, "0d6c3b8e-2f7a-4f55-8a51-93a1c1b0f5aa", exampleBody, time.Now())
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	// Output:
	// settle order-1042 as SUCCESS
	// 200
	// 200
}

func ExampleError() {
	// What GetTransaction returns for an unknown id.
	var err error = &client.Error{Code: client.CodeNotFound, Status: 404,
		Message: "transaction not found", RequestID: "req_8f2c"}

	fmt.Println(errors.Is(err, client.ErrNotFound))
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.RequestID)
	}
	fmt.Println(err)
	// Output:
	// true
	// 404 req_8f2c
	// momopay: NOT_FOUND (HTTP 404): transaction not found [request_id=req_8f2c]
}

func ExampleNew() {
	c := client.New(os.Getenv("MOMOPAY_API_KEY"),
		client.WithBaseURL("https://api.example.td"),
		client.WithTimeout(10*time.Second),
		client.WithUserAgent("shop/1.4"),
	)
	_ = c
}

func ExampleClient_CreateTransaction() {
	c := client.New(os.Getenv("MOMOPAY_API_KEY"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tx, err := c.CreateTransaction(ctx, client.CreateTransactionParams{
		Reference:   "order-1042", // your order id: retrying with it never charges twice
		Amount:      2500,
		Operator:    client.OperatorAirtel,
		PhoneNumber: "+23566000000",
		Description: "Order 1042",
	})
	var apiErr *client.Error
	switch {
	case errors.Is(err, client.ErrValidation) && errors.As(err, &apiErr):
		for field, msg := range apiErr.Fields {
			log.Printf("%s: %s", field, msg) // show these to the customer
		}
	case errors.Is(err, client.ErrGatewayUnavailable) && errors.As(err, &apiErr):
		log.Printf("operator down, try again in %s", apiErr.RetryAfter)
	case err != nil:
		log.Print(err)
	default:
		log.Printf("ask the customer to confirm on their phone; %s is %s", tx.ID, tx.Status)
	}
}

func ExampleClient_AllTransactions() {
	c := client.New(os.Getenv("MOMOPAY_API_KEY"))
	yesterday := time.Now().Add(-24 * time.Hour)

	var total int64
	for tx, err := range c.AllTransactions(context.Background(), client.ListParams{
		Status: client.StatusSuccess, From: yesterday, PerPage: 100,
	}) {
		if err != nil {
			log.Fatal(err)
		}
		total += tx.Amount
	}
	fmt.Println("collected in the last 24 hours:", total, "XAF")
}
