package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
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

// TestRunWebhook runs the example end to end against the real server with a
// webhook secret: it must receive, verify and print the transaction.success
// event the server delivers to its receiver.
func TestRunWebhook(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	listen := freeLoopbackAddr(t)
	ep, err := srv.App.Webhooks.CreateEndpoint(context.Background(), srv.MerchantID, "http://"+listen+"/webhooks/momopay")
	if err != nil {
		t.Fatalf("register the example's receiver: %v", err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	getenv := func(k string) string {
		return map[string]string{"MOMOPAY_URL": srv.URL, "MOMOPAY_API_KEY": srv.APIKey, "MOMOPAY_WEBHOOK_SECRET": ep.Secret}[k]
	}
	if err := run(ctx, []string{"-listen", listen, "-wait", "20s"}, getenv, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	created := regexp.MustCompile(`(?m)^created (\S+) `).FindStringSubmatch(got)
	if created == nil {
		t.Fatalf("output does not show the payment created:\n%s", got)
	}
	for _, want := range []string{
		fmt.Sprintf("listening for webhooks on http://%s/webhooks/momopay\n", listen),
		"webhook transaction.success (delivery ",
		`"event": "transaction.success"`,
		fmt.Sprintf(`"id": %q`, created[1]),
		`"status": "SUCCESS"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(delivery )") {
		t.Errorf("the event was printed without its delivery id:\n%s", got)
	}
}

// freeLoopbackAddr returns a loopback address with a port that was free a
// moment ago, for a receiver that must be registered before it listens.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestRunNeedsKey(t *testing.T) {
	err := run(context.Background(), nil, func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "MOMOPAY_API_KEY") {
		t.Errorf("err = %v, want a hint about MOMOPAY_API_KEY", err)
	}
}
