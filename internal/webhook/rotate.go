package webhook

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/momopay/momopay/internal/store"
)

// SecretGrace is how long an endpoint's secret stays valid after it was
// rotated out: time for the merchant to deploy the new one without missing
// an event.
const SecretGrace = 24 * time.Hour

// RotateSecret gives one of the merchant's endpoints a fresh signing secret
// and keeps the current one valid for SecretGrace: until then every
// delivery carries two webhook-signature values, one per secret, so a
// receiver verifying with either accepts it. X-Service-Signature is made
// with the new secret only (the contract's header holds one value).
// Rotating again within the grace period drops the oldest secret at once:
// only the secret just replaced stays valid. Except within RecentRotation
// of the last rotation: then the secret that rotation made, shown moments
// ago and hardly deployed yet, is the one replaced, and the secret before
// it (what receivers still verify with) keeps its grace. Two people
// rotating at once from two pages, or one who lost the page with the new
// secret and rotates again, would otherwise end the secret in use with no
// warning. The returned Endpoint carries
// the new secret; it is never readable again, so show it to the merchant
// now. ErrEndpointNotFound for an endpoint that is not the merchant's or
// was deleted.
//
// request names this rotation (the dashboard form's token): when the
// endpoint's last rotation had the same one, the request was sent again
// (a reload), and nothing rotates; the answer is the endpoint without a
// secret and ErrRotationDone. "" is a new rotation each time.
func (s *Service) RotateSecret(ctx context.Context, merchantID, endpointID, request string) (*Endpoint, error) {
	if !isUUID(merchantID, endpointID) {
		return nil, ErrEndpointNotFound
	}
	secret, err := NewSecret()
	if err != nil {
		return nil, err
	}
	now := s.stamp()
	until := now.Add(SecretGrace)
	e := &Endpoint{Secret: secret}
	var created, kept store.Timestamp
	// A previous secret due to expire after $6 was made by a rotation
	// less than RecentRotation ago: it stays, and only the current secret
	// is replaced. (SET reads the row as it was before the UPDATE.)
	err = s.db.QueryRowContext(ctx, `UPDATE webhook_endpoints
		SET previous_secret = CASE WHEN previous_secret_expires_at > $6 THEN previous_secret ELSE secret END,
			previous_secret_expires_at = CASE WHEN previous_secret_expires_at > $6 THEN previous_secret_expires_at ELSE $3 END,
			secret = $4, rotation_request = NULLIF($5, '')
		WHERE merchant_id = $1 AND id = $2 AND deleted_at IS NULL AND ($5 = '' OR COALESCE(rotation_request, '') <> $5)
		RETURNING id, merchant_id, url, enabled, created_at, previous_secret_expires_at, previous_secret_expires_at <> $3`,
		merchantID, endpointID, s.db.Time(until), secret, request, s.db.Time(until.Add(-RecentRotation))).
		Scan(&e.ID, &e.MerchantID, &e.URL, &e.Enabled, &created, &kept, &e.ReplacedRecent)
	if errors.Is(err, sql.ErrNoRows) && request != "" {
		return s.rotatedBy(ctx, merchantID, endpointID, request)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrEndpointNotFound
	}
	if err != nil {
		return nil, err
	}
	e.CreatedAt, e.PreviousSecretExpiresAt = created.Time, &kept.Time
	s.log.Info("webhook secret rotated", "merchant_id", merchantID, "endpoint_id", endpointID, "previous_valid_until", kept.Time)
	return e, nil
}

// RecentRotation is how soon after a rotation another one replaces only
// the secret the first made (see RotateSecret).
const RecentRotation = 10 * time.Minute

// ErrRotationDone is RotateSecret's answer to a request that already
// rotated the endpoint's secret.
var ErrRotationDone = errors.New("this request already rotated the endpoint's secret")

// rotatedBy answers a RotateSecret that changed nothing: the endpoint
// without its secret and ErrRotationDone if request made its last
// rotation, ErrEndpointNotFound otherwise.
func (s *Service) rotatedBy(ctx context.Context, merchantID, endpointID, request string) (*Endpoint, error) {
	e, err := s.endpointByID(ctx, merchantID, endpointID)
	if err != nil {
		return nil, err
	}
	if e == nil || e.deleted || e.rotationRequest != request {
		return nil, ErrEndpointNotFound
	}
	return &e.Endpoint, ErrRotationDone
}
