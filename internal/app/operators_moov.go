package app

import (
	"errors"
	"strings"
)

// moovRequired are the environment variables of Moov Money in live mode.
var moovRequired = []string{"MOMOPAY_MOOV_URL", "MOMOPAY_MOOV_USERNAME", "MOMOPAY_MOOV_PASSWORD", "MOMOPAY_MOOV_KEY"}

// liveMoov adds the Moov adapter to set when the environment configures
// it; missing lists the variables of a half-configured Moov.
func (a *App) liveMoov(set *operatorSet) (missing []string, configured bool, err error) {
	var have int
	for _, n := range moovRequired {
		if strings.TrimSpace(a.cfg.Getenv(n)) == "" {
			missing = append(missing, n)
		} else {
			have++
		}
	}
	if have == 0 {
		return nil, false, nil
	}
	if len(missing) > 0 {
		return missing, false, nil
	}
	return nil, false, errors.New("MOMOPAY_MOOV_* is set, but this build has no Moov Money adapter yet: unset them to serve Airtel alone")
}
