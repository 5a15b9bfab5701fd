package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/testserver"
)

// TestRunPolling runs the example end to end against the real server,
// without a webhook secret, so it follows the payment by polling.
func TestRunPolling(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	getenv := func(k string) string {
		return map[string]string{"MOMOPAY_URL": srv.URL, "MOMOPAY_API_KEY": srv.APIKey}[k]
	}
	if err := run(ctx, []string{"-wait", "20s"}, getenv, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "PENDING") || !strings.Contains(out.String(), "is SUCCESS") {
		t.Errorf("output does not show the payment created and settled:\n%s", out.String())
	}
}

func TestRunNeedsKey(t *testing.T) {
	err := run(context.Background(), nil, func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "MOMOPAY_API_KEY") {
		t.Errorf("err = %v, want a hint about MOMOPAY_API_KEY", err)
	}
}
