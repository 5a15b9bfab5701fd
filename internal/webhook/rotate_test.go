package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/payment"
	"github.com/momopay/momopay/internal/webhook"
)

// stockVerify checks webhook-signature as the Standard Webhooks libraries
// do: the header is a space-separated list of "v1,<base64>" signatures and
// the message is accepted when any one of them matches the secret.
func stockVerify(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// TestRotateSecret: after a rotation, a receiver still holding the old
// secret and one already holding the new one both verify every delivery and
// test event for 24 hours; after that only the new secret signs. The new
// secret is returned by the rotation and by nothing else; the same request
// sent again rotates nothing; another merchant's endpoint (even with the
// request's token) and a deleted one cannot be rotated.
func TestRotateSecret(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		rc := newReceiver(t, nil)
		e := f.endpoint(t, f.merchant, rc)
		old := e.Secret

		f.clock.Advance(time.Hour)
		const form1 = "FORMTOKENFORMTOKENFORMTOKE"
		rotated, err := s.RotateSecret(ctx, f.merchant, e.ID, form1)
		if err != nil {
			t.Fatal(err)
		}
		// The same request again (a reload of the page showing the new
		// secret) rotates nothing: the secret it showed and the one
		// before it both stay valid, and neither is returned.
		again, err := s.RotateSecret(ctx, f.merchant, e.ID, form1)
		if !errors.Is(err, webhook.ErrRotationDone) || again == nil || again.Secret != "" || again.ID != e.ID ||
			again.PreviousSecretExpiresAt == nil || !again.PreviousSecretExpiresAt.Equal(*rotated.PreviousSecretExpiresAt) {
			t.Fatalf("the rotation sent again: %+v, %v", again, err)
		}
		if rotated.Secret == old || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.ID != e.ID || rotated.URL != e.URL {
			t.Fatalf("rotated endpoint: %+v", rotated)
		}
		if want := f.clock.Now().Add(24 * time.Hour); rotated.PreviousSecretExpiresAt == nil || !rotated.PreviousSecretExpiresAt.Equal(want) {
			t.Fatalf("old secret valid until %v, want %v", rotated.PreviousSecretExpiresAt, want)
		}
		// The listing says the old secret is still valid, but shows neither.
		list, err := s.Endpoints(ctx, f.merchant)
		if err != nil || len(list) != 1 || list[0].Secret != "" || list[0].PreviousSecretExpiresAt == nil {
			t.Fatalf("endpoints after rotation: %+v %v", list, err)
		}

		check := func(r request, wantOld bool) {
			t.Helper()
			sigs := strings.Fields(r.header.Get("webhook-signature"))
			if wantOld && len(sigs) != 2 || !wantOld && len(sigs) != 1 {
				t.Errorf("webhook-signature has %d signatures, want old=%v: %q", len(sigs), wantOld, r.header.Get("webhook-signature"))
			}
			if !stockVerify(rotated.Secret, r.header, r.body) {
				t.Error("a receiver with the new secret refuses the delivery")
			}
			if got := stockVerify(old, r.header, r.body); got != wantOld {
				t.Errorf("a receiver with the old secret accepts: %v, want %v", got, wantOld)
			}
			if r.header.Get("X-Service-Signature") != serviceSignature(rotated.Secret, r.body) {
				t.Error("X-Service-Signature is not made with the new secret")
			}
		}

		// A delivery, then a test event, within the 24 hours.
		f.settle(t, f.merchant, payment.StatusSuccess)
		d := f.onlyDelivery(t, f.merchant)
		if _, err := s.Attempt(ctx, f.merchant, d.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Test(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		// After the 24 hours.
		f.clock.Advance(24*time.Hour + time.Second)
		if _, err := s.Test(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		reqs := rc.requests()
		if len(reqs) != 3 {
			t.Fatalf("receiver got %d requests, want 3", len(reqs))
		}
		check(reqs[0], true)
		check(reqs[1], true)
		check(reqs[2], false)
		if list, _ := s.Endpoints(ctx, f.merchant); list[0].PreviousSecretExpiresAt != nil {
			t.Errorf("the old secret is still listed as valid after 24 hours: %v", list[0].PreviousSecretExpiresAt)
		}

		// A second rotation keeps only the secret it replaces.
		const form2 = "SECONDTOKENSECONDTOKENSECO"
		second, err := s.RotateSecret(ctx, f.merchant, e.ID, form2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Test(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		last := rc.requests()[3]
		if !stockVerify(second.Secret, last.header, last.body) || !stockVerify(rotated.Secret, last.header, last.body) || stockVerify(old, last.header, last.body) {
			t.Errorf("after a second rotation: new %v, replaced %v, oldest %v; want true, true, false",
				stockVerify(second.Secret, last.header, last.body), stockVerify(rotated.Secret, last.header, last.body), stockVerify(old, last.header, last.body))
		}

		other := f.newMerchant(t)
		if _, err := s.RotateSecret(ctx, other, e.ID, form2); err != webhook.ErrEndpointNotFound {
			t.Errorf("another merchant rotated the secret: %v", err)
		}
		if _, err := s.RotateSecret(ctx, f.merchant, "not-an-id", ""); err != webhook.ErrEndpointNotFound {
			t.Errorf("malformed id: %v", err)
		}
		if err := s.DeleteEndpoint(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RotateSecret(ctx, f.merchant, e.ID, form2); err != webhook.ErrEndpointNotFound {
			t.Errorf("a deleted endpoint was rotated: %v", err)
		}
	})
}

// TestRotateTwiceAtOnce: two rotations moments apart (two people on two
// pages, or one who lost the page showing the new secret) keep the secret
// receivers verify with valid for its grace; the secret the first made,
// never deployed, is the one replaced. A rotation later than
// RecentRotation replaces as usual.
func TestRotateTwiceAtOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := f.app.Webhooks
		rc := newReceiver(t, nil)
		e := f.endpoint(t, f.merchant, rc)
		inUse := e.Secret

		first, err := s.RotateSecret(ctx, f.merchant, e.ID, "FIRSTFORMFIRSTFORMFIRSTFOR")
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Second)
		second, err := s.RotateSecret(ctx, f.merchant, e.ID, "OTHERFORMOTHERFORMOTHERFOR")
		if err != nil {
			t.Fatal(err)
		}
		if second.PreviousSecretExpiresAt == nil || !second.PreviousSecretExpiresAt.Equal(*first.PreviousSecretExpiresAt) {
			t.Errorf("the second rotation says the previous secret lasts until %v, want the first's %v", second.PreviousSecretExpiresAt, first.PreviousSecretExpiresAt)
		}
		signedBy := func() (inUseOK, firstOK, secondOK bool) {
			t.Helper()
			if _, err := s.Test(ctx, f.merchant, e.ID); err != nil {
				t.Fatal(err)
			}
			reqs := rc.requests()
			r := reqs[len(reqs)-1]
			return stockVerify(inUse, r.header, r.body), stockVerify(first.Secret, r.header, r.body), stockVerify(second.Secret, r.header, r.body)
		}
		if a, b, c := signedBy(); !a || b || !c {
			t.Errorf("after two rotations at once: the secret in use %v, the first's %v, the second's %v; want true, false, true", a, b, c)
		}

		f.clock.Advance(webhook.RecentRotation)
		third, err := s.RotateSecret(ctx, f.merchant, e.ID, "THIRDFORMTHIRDFORMTHIRDFOR")
		if err != nil {
			t.Fatal(err)
		}
		if want := f.clock.Now().Add(webhook.SecretGrace); !third.PreviousSecretExpiresAt.Equal(want) {
			t.Errorf("a later rotation: previous secret until %v, want %v", third.PreviousSecretExpiresAt, want)
		}
		if _, err := s.Test(ctx, f.merchant, e.ID); err != nil {
			t.Fatal(err)
		}
		reqs := rc.requests()
		r := reqs[len(reqs)-1]
		if stockVerify(inUse, r.header, r.body) || !stockVerify(second.Secret, r.header, r.body) || !stockVerify(third.Secret, r.header, r.body) {
			t.Error("a rotation later than RecentRotation must keep only the secret it replaced")
		}
	})
}
