package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator/airtel/airtelsim"
	"github.com/momopay/momopay/internal/operator/moov"
	"github.com/momopay/momopay/internal/testdb"
	"github.com/momopay/momopay/internal/testlog"
)

// runWith runs the binary with extra environment and stdin, returning
// stdout, stderr and whether it succeeded.
func runWith(t *testing.T, env []string, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), errOut.String(), err
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("momopay %s did not end:\n%s\n%s", strings.Join(args, " "), out.String(), errOut.String())
	}
	return "", "", nil
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return v
}

// TestLiveMode starts "serve --mode live" as a process with its
// environment pointing at a fake Airtel and a fake Moov (their simulators,
// served by the test), and walks one payment per operator end to end:
// Airtel's push, signed callback, SUCCESS, its reference kept and a refund
// from the command line; Moov's SOAP push and enquiries to SUCCESS. A
// half-configured Airtel, or no operator at all, stops the start with
// every missing variable named; the credentials never reach the log.
func TestLiveMode(t *testing.T) {
	t.Parallel()
	const clientSecret, callbackSecret = "live-client-secret-0123456789", "live-callback-secret"
	var callbackURL atomic.Value
	callbackURL.Store("")
	sim := airtelsim.New(airtelsim.Config{
		ClientID: "live-client", ClientSecret: clientSecret, CallbackSecret: []byte(callbackSecret),
		CallbackURL: func() string { return callbackURL.Load().(string) }, AnswerDelay: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	fakeAirtel := httptest.NewTLSServer(sim.Handler())
	t.Cleanup(fakeAirtel.Close)
	const moovToken = "live-moov-token-0123456789"
	fakeMoov := httptest.NewTLSServer(moov.NewSimulator(moov.SimulatorConfig{
		Token: moovToken, AnswerDelay: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}))
	t.Cleanup(fakeMoov.Close)
	moovURL := fakeMoov.URL + "/"

	db := filepath.Join(t.TempDir(), "live.db")
	if _, errOut, err := runWith(t, nil, "", "migrate", "--db", db); err != nil {
		t.Fatalf("migrate: %v %s", err, errOut)
	}
	out, errOut, err := runWith(t, nil, "a long password for live\n", "merchant", "create", "--name", "Live Shop", "--email", "live@example.td", "--password-stdin", "--db", db, "--json")
	if err != nil {
		t.Fatalf("merchant create: %v %s", err, errOut)
	}
	merchant := jsonOf(t, out)["id"].(string)
	out, errOut, err = runWith(t, nil, "", "apikey", "create", "--merchant", merchant, "--db", db, "--json")
	if err != nil {
		t.Fatalf("apikey create: %v %s", err, errOut)
	}
	key := jsonOf(t, out)["key"].(string)

	env := []string{
		"MOMOPAY_AIRTEL_BASE_URL=" + fakeAirtel.URL, "MOMOPAY_AIRTEL_CLIENT_ID=live-client",
		"MOMOPAY_AIRTEL_CLIENT_SECRET=" + clientSecret, "MOMOPAY_AIRTEL_CALLBACK_SECRET=" + callbackSecret,
		"MOMOPAY_SESSION_SECRET=a-session-secret-for-the-dashboard-0123456789",
		"MOMOPAY_MOOV_URL=" + moovURL, "MOMOPAY_MOOV_TOKEN=" + moovToken,
	}
	// A half-configured operator, or none at all, stops the start.
	_, errOut, err = runWith(t, []string{"MOMOPAY_AIRTEL_BASE_URL=" + fakeAirtel.URL}, "", "serve", "--mode", "live", "--addr", "127.0.0.1:0", "--db", db)
	if err == nil || !strings.Contains(errOut, "MOMOPAY_AIRTEL_CLIENT_ID") || !strings.Contains(errOut, "MOMOPAY_AIRTEL_CLIENT_SECRET") {
		t.Errorf("half-configured Airtel: %v\n%s", err, errOut)
	}
	_, errOut, err = runWith(t, nil, "", "serve", "--mode", "live", "--addr", "127.0.0.1:0", "--db", db)
	if err == nil || !strings.Contains(errOut, "at least one operator") {
		t.Errorf("no operator: %v\n%s", err, errOut)
	}
	// A refused base URL (plain http: live mode reaches operators over
	// https only) is named without the password it may carry.
	_, errOut, err = runWith(t, []string{"MOMOPAY_AIRTEL_BASE_URL=http://u:AirUrlPw@" + strings.TrimPrefix(fakeAirtel.URL, "https://"), "MOMOPAY_AIRTEL_CLIENT_ID=live-client",
		"MOMOPAY_AIRTEL_CLIENT_SECRET=" + clientSecret, "MOMOPAY_SESSION_SECRET=a-session-secret-for-the-dashboard-0123456789"},
		"", "serve", "--mode", "live", "--addr", "127.0.0.1:0", "--db", db)
	if err == nil || !strings.Contains(errOut, "MOMOPAY_AIRTEL_BASE_URL") || !strings.Contains(errOut, "is not an https URL") ||
		strings.Contains(errOut, "AirUrlPw") || strings.Contains(errOut, clientSecret) {
		t.Errorf("Airtel base URL over plain http, with a password: %v\n%s", err, errOut)
	}

	cmd := exec.Command(binary, "serve", "--mode", "live", "--addr", "127.0.0.1:0", "--db", db)
	cmd.Env = append(os.Environ(), env...)
	p := &process{cmd: cmd, stdout: &testlog.Buffer{}}
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = p.stdout, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; p.url == ""; i++ {
		if m := listeningLine.FindStringSubmatch(logs.String()); m != nil {
			p.url = m[1]
		} else if i > 400 {
			t.Fatalf("live momopay did not start:\n%s", logs)
		}
		time.Sleep(25 * time.Millisecond)
	}
	callbackURL.Store(p.url + "/callbacks/airtel")

	pay := func(ref, op, phone string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", p.url+"/v1/transactions", strings.NewReader(fmt.Sprintf(
			`{"reference":%q,"amount":1500,"currency":"XAF","operator":%q,"phone_number":%q}`, ref, op, phone)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}

	code, tx := pay("live-1", "AIRTEL", "+23560000001")
	if code != 201 || tx["status"] != "PENDING" {
		t.Fatalf("create: %d %v", code, tx)
	}
	id, ref := tx["id"].(string), tx["internal_ref"].(string)
	deadline := time.Now().Add(15 * time.Second)
	for get(t, p, key, id).Status != "SUCCESS" {
		if time.Now().After(deadline) {
			t.Fatalf("the payment never settled:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The settled line is written just after the commit a GET can see.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "source=callback"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("settled, but not by Airtel's signed callback:\n%s", logs)
			break
		}
	}

	// Moov: the SOAP push, then status enquiries until completed.
	code, tx = pay("live-2", "MOOV", "+23560000001")
	if code != 201 || tx["status"] != "PENDING" {
		t.Fatalf("create MOOV: %d %v", code, tx)
	}
	moovID := tx["id"].(string)
	for get(t, p, key, moovID).Status != "SUCCESS" {
		if time.Now().After(deadline) {
			t.Fatalf("the Moov payment never settled:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := pay("live-3", "AIRTEL", "+23560000005"); code != 503 {
		t.Errorf("Airtel refusing the push: %d %v", code, body)
	}
	forged := airtelsim.SignedCallback([]byte("forger"), ref, "TF", "x", "AM")
	if resp, err := http.Post(p.url+"/callbacks/airtel", "application/json", bytes.NewReader(forged)); err != nil || resp.StatusCode != 401 {
		t.Errorf("forged callback: %v %v", resp, err)
	}

	// The database has served live: a command without MOMOPAY_MODE=live
	// is refused, rather than run with the simulators.
	if _, errOut, err = runWith(t, env, "", "transaction", "show", id, "--db", db); err == nil || !strings.Contains(errOut, "MOMOPAY_MODE=live") {
		t.Errorf("a command in sandbox mode on the live database: %v %s", err, errOut)
	}
	out, errOut, err = runWith(t, append(env, "MOMOPAY_MODE=live"), "", "transaction", "show", id, "--db", db, "--json")
	if err != nil {
		t.Fatalf("transaction show: %v %s", err, errOut)
	}
	if shown := jsonOf(t, out); shown["operator_ref"] != airtelsim.AirtelMoneyID(ref) || shown["status"] != "SUCCESS" {
		t.Errorf("transaction show: %v", shown)
	}
	out, errOut, err = runWith(t, append(env, "MOMOPAY_MODE=live"), "", "refund", id, "--by", "ops@example.td", "--db", db, "--json")
	if err != nil {
		t.Fatalf("refund: %v %s", err, errOut)
	}
	if r := jsonOf(t, out); r["status"] != "REFUNDED" || r["requested_by"] != "ops@example.td" {
		t.Errorf("refund: %v", r)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if l := logs.String(); strings.Contains(l, clientSecret) || strings.Contains(l, callbackSecret) || strings.Contains(l, moovToken) || strings.Contains(l, "Bearer") {
		t.Errorf("a credential reached the log:\n%s", l)
	}
	if !strings.Contains(logs.String(), `operation=push`) {
		t.Errorf("operator calls not logged:\n%s", logs)
	}
}

// TestServedSandboxRefusesLive: a database a sandbox serve has served is
// refused in live mode, by serve and by the administrative commands, and
// nothing of it is marked live: its demo merchant, whose password and API
// key serve printed in clear, would take real money.
func TestServedSandboxRefusesLive(t *testing.T) {
	testdb.Each(t, func(t *testing.T, engine string) {
		db := testdb.URL(t, engine)
		p := serve(t, db)
		if !strings.Contains(p.stdout.String(), "created a demo merchant") {
			t.Fatalf("no demo merchant printed:\n%s", p.stdout)
		}
		p.cmd.Process.Kill()
		p.cmd.Wait()
		env := []string{"MOMOPAY_SESSION_SECRET=a-session-secret-for-the-dashboard-0123456789",
			"MOMOPAY_AIRTEL_BASE_URL=https://127.0.0.1:1", "MOMOPAY_AIRTEL_CLIENT_ID=id", "MOMOPAY_AIRTEL_CLIENT_SECRET=secret"}
		for _, args := range [][]string{{"serve", "--mode", "live", "--addr", "127.0.0.1:0"}, {"merchant", "list", "--mode", "live"}} {
			_, errOut, err := runWith(t, env, "", append(args, "--db", db)...)
			if err == nil || !strings.Contains(errOut, "served in sandbox mode") || !strings.Contains(errOut, "momopay migrate --db") {
				t.Errorf("%v on a sandbox database: %v\n%s", args, err, errOut)
			}
		}
		if out, errOut, err := runWith(t, nil, "", "merchant", "list", "--db", db); err != nil || !strings.Contains(out, "demo@momopay.local") {
			t.Errorf("the sandbox after the refusals: %v %q %s", err, out, errOut)
		}
	})
}
