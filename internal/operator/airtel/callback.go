package airtel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/momopay/momopay/internal/operator"
)

// HashHeaders are the headers a callback's hash may come in, when it is not
// in the body's "hash" field. Unverified: Airtel documents the body field;
// one public integration reads a header instead.
var HashHeaders = []string{"Hash", "X-Hash", "X-Signature"}

// CallbackBody is Airtel's callback: {transaction{id, message,
// status_code, airtel_money_id}, hash?}. The simulator sends it too.
type CallbackBody struct {
	Transaction CallbackTransaction `json:"transaction"`
	Hash        string              `json:"hash,omitempty"`
}

// CallbackTransaction is the transaction object of a callback.
type CallbackTransaction struct {
	ID            string `json:"id"`
	Message       string `json:"message"`
	StatusCode    string `json:"status_code"`
	AirtelMoneyID string `json:"airtel_money_id"`
}

// Hash is Airtel's callback hash of msg: Base64 HMAC-SHA256 with the
// private key of the portal.
func Hash(secret, msg []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(msg)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ReadCallback implements operator.CallbackReader.
//
// What exactly Airtel hashes is not documented (unverified). A hash is
// accepted when it matches either the raw "transaction" object as sent
// (what the simulator signs) or the whole raw body (the natural reading
// when the hash comes in a header). A hash that matches neither is a
// forgery: refused, as is one without a hash when a callback secret is
// configured. Without a secret no callback can be checked: each is
// returned Unverified, a hint that makes the service ask Airtel at once,
// never a settlement by itself.
func (a *Adapter) ReadCallback(header map[string][]string, body []byte) (operator.Callback, error) {
	var raw struct {
		Transaction json.RawMessage `json:"transaction"`
		Hash        string          `json:"hash"`
	}
	var cb CallbackBody
	if saysTwoThings(body) != nil || json.Unmarshal(body, &raw) != nil || json.Unmarshal(body, &cb) != nil || cb.Transaction.ID == "" {
		return operator.Callback{}, fmt.Errorf("%w: unreadable body", operator.ErrCallbackRejected)
	}
	hash := raw.Hash
	for _, h := range HashHeaders {
		if hash != "" {
			break
		}
		hash = http.Header(header).Get(h)
	}
	tx := cb.Transaction
	out := operator.Callback{Ref: tx.ID, Outcome: outcomeOf(tx.StatusCode, "", tx.Message, tx.AirtelMoneyID)}
	if out.Outcome.State == operator.Failed {
		// The callback carries no DP code: the service asks the enquiry
		// for it (payment.Service.HandleCallback); "other" until then.
		out.Outcome.Code = tx.StatusCode
	}
	if len(a.cfg.CallbackSecret) == 0 {
		out.Unverified = true
		return out, nil
	}
	if hash == "" {
		// With a callback secret, callback authentication is enabled in
		// Airtel's portal and every callback comes signed: one without a
		// hash is nobody's word, and must not cost an enquiry either.
		return operator.Callback{}, fmt.Errorf("%w: no hash, and a callback secret is configured", operator.ErrCallbackRejected)
	}
	for _, msg := range [][]byte{raw.Transaction, body} {
		if hmac.Equal([]byte(hash), []byte(Hash(a.cfg.CallbackSecret, msg))) {
			return out, nil
		}
	}
	return operator.Callback{}, fmt.Errorf("%w: hash does not match", operator.ErrCallbackRejected)
}
