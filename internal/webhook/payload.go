package webhook

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/momopay/momopay/internal/payment"
)

// EventTest is the connectivity check sent on demand (contract section 6.1).
// It is not a payment.Status event: no transaction ever causes it.
const EventTest = "transaction.test"

// eventBody is the envelope of every event (contract section 6.2).
type eventBody struct {
	Event     string `json:"event"`
	Data      any    `json:"data"`
	Timestamp string `json:"timestamp"`
}

// transactionData is exactly the data of a production event (section 6.2):
// the transaction as the API shows it, less expires_at. Description is a
// pointer without omitempty because the contract says "string or null".
type transactionData struct {
	ID          string  `json:"id"`
	Reference   string  `json:"reference"`
	InternalRef string  `json:"internal_ref"`
	Amount      int64   `json:"amount"`
	Currency    string  `json:"currency"`
	Operator    string  `json:"operator"`
	PhoneNumber string  `json:"phone_number"`
	Description *string `json:"description"`
	Status      string  `json:"status"`
	CreatedAt   string  `json:"created_at"`
	UpdatedAt   string  `json:"updated_at"`
}

// testData is the test event's data (section 6.2): fewer fields than a
// production event, and confirmed_at, always null.
type testData struct {
	ID          string  `json:"id"`
	Reference   string  `json:"reference"`
	Amount      int64   `json:"amount"`
	Currency    string  `json:"currency"`
	Operator    string  `json:"operator"`
	PhoneNumber string  `json:"phone_number"`
	Status      string  `json:"status"`
	ConfirmedAt *string `json:"confirmed_at"`
}

// eventPayload builds the body of event for t once; the bytes are stored
// with each delivery and sent unchanged on every attempt, so signatures and
// receivers' deduplication see the same message.
func eventPayload(event string, t *payment.Transaction) ([]byte, error) {
	return json.Marshal(eventBody{
		Event: event,
		Data: transactionData{
			ID: t.ID, Reference: t.Reference, InternalRef: t.InternalRef, Amount: t.Amount, Currency: t.Currency,
			Operator: string(t.Operator), PhoneNumber: t.PhoneNumber, Description: t.Description, Status: string(t.Status),
			CreatedAt: payment.FormatTime(t.CreatedAt), UpdatedAt: payment.FormatTime(t.UpdatedAt),
		},
		Timestamp: payment.FormatTime(t.UpdatedAt),
	})
}

// testPayload builds a test event with fictitious data that no receiver can
// mistake for a real payment: a fresh id, a "test_" reference and a number
// outside any operator's range.
func testPayload(now time.Time) ([]byte, error) {
	id := uuid.NewString()
	return json.Marshal(eventBody{
		Event: EventTest,
		Data: testData{
			ID: id, Reference: "test_" + id[:8], Amount: 1000, Currency: payment.Currency,
			Operator: string(payment.OperatorAirtel), PhoneNumber: "+23500000000", Status: string(payment.StatusSuccess),
		},
		Timestamp: payment.FormatTime(now),
	})
}
