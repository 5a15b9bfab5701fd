package moov

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestConfigFromEnv names every missing variable and never a value.
func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if _, err := ConfigFromEnv(env(nil)); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("nothing set: %v", err)
	}
	_, err := ConfigFromEnv(env(map[string]string{EnvPassword: "hunter2"}))
	var missing *MissingEnvError
	if !errors.As(err, &missing) || fmt.Sprint(missing.Names) != fmt.Sprint([]string{EnvURL, EnvUsername, EnvKey}) {
		t.Fatalf("partial: %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Error("a value in the error")
	}
	full := map[string]string{EnvURL: "https://moov.example/api", EnvUsername: "u", EnvPassword: "p", EnvKey: testKey}
	c, err := ConfigFromEnv(env(full))
	if err != nil || c.URL != full[EnvURL] || c.Key != testKey {
		t.Fatalf("full: %+v, %v", c, err)
	}
	if _, err := ConfigFromEnv(env(map[string]string{EnvURL: "https://moov.example/api", EnvToken: "T"})); err != nil {
		t.Errorf("token instead of credentials: %v", err)
	}
	for name, m := range map[string]map[string]string{
		"relative URL": {EnvURL: "moov.example", EnvUsername: "u", EnvPassword: "p", EnvKey: testKey},
		"ftp URL":      {EnvURL: "ftp://moov.example", EnvUsername: "u", EnvPassword: "p", EnvKey: testKey},
		"short key":    {EnvURL: "https://moov.example", EnvUsername: "u", EnvPassword: "p", EnvKey: "secret-key"},
	} {
		if _, err := ConfigFromEnv(env(m)); err == nil {
			t.Errorf("%s accepted", name)
		} else if strings.Contains(err.Error(), "secret-key") {
			t.Errorf("%s: the key is in the error: %v", name, err)
		}
	}
}
