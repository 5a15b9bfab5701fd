package sandbox

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/momopay/momopay/internal/operator"
)

// SignatureHeader authenticates the sandbox's callbacks: "sha256=" and the
// hex HMAC-SHA256 of the body with the sandbox's callback secret. (Airtel's
// own callback authentication is unverified, see shared/reference; the live
// adapter brings its real scheme.)
const SignatureHeader = "X-Sandbox-Signature"

// Callbacks configures how the simulated operator calls the service back.
type Callbacks struct {
	// Secret signs and verifies callbacks.
	Secret []byte
	// URL returns where to post them ("" while the service is not serving:
	// the callback is then lost, as a real one can be, and polling settles).
	URL func() string
	// Client posts them.
	Client *http.Client
}

// callbackBody has the shape of Airtel's callback (operators.md):
// {transaction{id, message, status_code, airtel_money_id}}, with Airtel's
// status codes TS (success), TF (failed) and TE (expired).
type callbackBody struct {
	Transaction struct {
		ID            string `json:"id"`
		Message       string `json:"message"`
		StatusCode    string `json:"status_code"`
		AirtelMoneyID string `json:"airtel_money_id"`
	} `json:"transaction"`
}

var stateCodes = map[operator.State]string{operator.Succeeded: "TS", operator.Failed: "TF", operator.Expired: "TE"}

func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// SignedCallback builds the body and signature of a callback, as the
// simulated operator sends it; tests use it to play the operator.
func SignedCallback(secret []byte, ref string, o operator.Outcome) (body []byte, signature string) {
	var b callbackBody
	b.Transaction.ID, b.Transaction.Message, b.Transaction.StatusCode = ref, o.Detail, stateCodes[o.State]
	b.Transaction.AirtelMoneyID = "SBX" + strings.TrimPrefix(ref, "SERVICE-")
	body, _ = json.Marshal(b)
	return body, sign(secret, body)
}

// sendCallback posts one callback; a failure is logged and forgotten, as an
// operator that does not retry its callbacks would.
func (o *Operator) sendCallback(ref string, outcome operator.Outcome) {
	url := o.callbacks.URL()
	if url == "" {
		o.log.Info("sandbox callback lost: the service is not serving; polling will settle", "internal_ref", ref)
		return
	}
	body, sig := SignedCallback(o.callbacks.Secret, ref, outcome)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+strings.ToLower(o.name), bytes.NewReader(body))
	if err != nil {
		o.log.Error("sandbox callback", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, sig)
	resp, err := o.callbacks.Client.Do(req)
	if err != nil {
		o.log.Warn("sandbox callback lost; polling will settle", "internal_ref", ref, "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		o.log.Warn("sandbox callback refused; polling will settle", "internal_ref", ref, "status", resp.StatusCode)
	}
}

// ReadCallback implements operator.CallbackReader.
func (o *Operator) ReadCallback(header map[string][]string, body []byte) (operator.Callback, error) {
	if !hmac.Equal([]byte(http.Header(header).Get(SignatureHeader)), []byte(sign(o.callbacks.Secret, body))) {
		return operator.Callback{}, fmt.Errorf("%w: bad %s", operator.ErrCallbackRejected, SignatureHeader)
	}
	var b callbackBody
	if err := json.Unmarshal(body, &b); err != nil || b.Transaction.ID == "" {
		return operator.Callback{}, fmt.Errorf("%w: unreadable body", operator.ErrCallbackRejected)
	}
	cb := operator.Callback{Ref: b.Transaction.ID, Outcome: operator.Outcome{State: operator.Pending, Detail: b.Transaction.Message}}
	for state, code := range stateCodes {
		if code == b.Transaction.StatusCode {
			cb.Outcome.State = state
		}
	}
	return cb, nil
}
