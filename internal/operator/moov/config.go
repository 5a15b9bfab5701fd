package moov

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The environment variables of the live Moov adapter.
const (
	EnvURL      = "MOMOPAY_MOOV_URL"      // the SOAP endpoint, e.g. https://host/…/MerchantService (path UNVERIFIED)
	EnvUsername = "MOMOPAY_MOOV_USERNAME" // the merchant API user Moov creates
	EnvPassword = "MOMOPAY_MOOV_PASSWORD"
	EnvKey      = "MOMOPAY_MOOV_KEY" // the AES key Moov supplies to build the token
	// EnvToken optionally replaces username, password and key with the
	// finished token, for when Moov Tchad's token is not built as Token
	// builds it (the token has no expiry in the SDKs, so it is constant).
	EnvToken = "MOMOPAY_MOOV_TOKEN"
)

// Config is what the adapter needs to reach Moov.
type Config struct {
	URL      string
	Username string
	Password string
	Key      string
	Token    string
}

// ErrNotConfigured means no MOMOPAY_MOOV_ variable is set: Moov is left
// out, and its payments are refused with a clear message.
var ErrNotConfigured = errors.New("moov is not configured")

// MissingEnvError names every variable a partial configuration lacks.
type MissingEnvError struct {
	Names []string
}

func (e *MissingEnvError) Error() string {
	return "moov configuration incomplete: set " + strings.Join(e.Names, ", ")
}

// ConfigFromEnv reads the configuration through getenv (os.Getenv in the
// binary). It returns ErrNotConfigured when none of the variables is set,
// *MissingEnvError naming each absent one when some are, and an error for a
// URL or key that cannot work. Values are never put in an error message.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		URL: getenv(EnvURL), Username: getenv(EnvUsername), Password: getenv(EnvPassword),
		Key: getenv(EnvKey), Token: getenv(EnvToken),
	}
	if c == (Config{}) {
		return c, ErrNotConfigured
	}
	required := []struct{ name, value string }{{EnvURL, c.URL}}
	if c.Token == "" {
		required = append(required, []struct{ name, value string }{
			{EnvUsername, c.Username}, {EnvPassword, c.Password}, {EnvKey, c.Key},
		}...)
	}
	var missing []string
	for _, r := range required {
		if r.value == "" {
			missing = append(missing, r.name)
		}
	}
	if missing != nil {
		return c, &MissingEnvError{Names: missing}
	}
	return c, c.Validate()
}

// Validate checks that the URL is absolute http(s) and, unless a token is
// given, that a token can be built from the key.
func (c Config) Validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%s must be an absolute http(s) URL", EnvURL)
	}
	if c.Token == "" {
		if _, err := Token(c.Username, c.Password, c.Key); err != nil {
			return fmt.Errorf("%s: %w", EnvKey, err)
		}
	}
	return nil
}

// token is the credential sent in every call.
func (c Config) token() (string, error) {
	if c.Token != "" {
		return c.Token, nil
	}
	return Token(c.Username, c.Password, c.Key)
}
