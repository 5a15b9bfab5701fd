package main_test

import (
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
	"syscall"
	"testing"
	"time"

	"github.com/momopay/momopay/internal/operator/moov"
	"github.com/momopay/momopay/internal/testlog"
)

// TestLiveModeMoov starts "serve --mode live" as a process with its
// environment pointing at a fake Moov (the simulator, served by the test)
// and walks Moov payments end to end: the SOAP push, SUCCESS learnt by
// polling (Moov has no callbacks), a FAILED one with its reason and Moov's
// code kept, a refused push answered 503. Airtel, left unconfigured, is
// refused with 422; a half-configured Moov stops the start with every
// missing variable named; no credential reaches the log.
func TestLiveModeMoov(t *testing.T) {
	t.Parallel()
	const user, password, key = "live-merchant", "moov-password-never-logged", "0123456789abcdefMOOVKEY-01234567"
	token, err := moov.Token(user, password, key)
	if err != nil {
		t.Fatal(err)
	}
	sim := moov.NewSimulator(moov.SimulatorConfig{Token: token, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	fakeMoov := httptest.NewTLSServer(sim)
	t.Cleanup(fakeMoov.Close)

	db := filepath.Join(t.TempDir(), "live-moov.db")
	if _, errOut, err := runWith(t, nil, "", "migrate", "--db", db); err != nil {
		t.Fatalf("migrate: %v %s", err, errOut)
	}
	out, errOut, err := runWith(t, nil, "a long password for live\n", "merchant", "create", "--name", "Moov Shop", "--email", "moov@example.td", "--password-stdin", "--db", db, "--json")
	if err != nil {
		t.Fatalf("merchant create: %v %s", err, errOut)
	}
	merchant := jsonOf(t, out)["id"].(string)
	out, errOut, err = runWith(t, nil, "", "apikey", "create", "--merchant", merchant, "--db", db, "--json")
	if err != nil {
		t.Fatalf("apikey create: %v %s", err, errOut)
	}
	apiKey := jsonOf(t, out)["key"].(string)

	env := []string{
		"MOMOPAY_MOOV_URL=" + fakeMoov.URL + "/", "MOMOPAY_MOOV_USERNAME=" + user,
		"MOMOPAY_MOOV_PASSWORD=" + password, "MOMOPAY_MOOV_KEY=" + key,
		"MOMOPAY_SESSION_SECRET=a-session-secret-for-the-dashboard-0123456789",
	}
	_, errOut, err = runWith(t, []string{"MOMOPAY_MOOV_USERNAME=" + user}, "", "serve", "--mode", "live", "--addr", "127.0.0.1:0", "--db", db)
	for _, name := range []string{"MOMOPAY_MOOV_URL", "MOMOPAY_MOOV_PASSWORD", "MOMOPAY_MOOV_KEY"} {
		if err == nil || !strings.Contains(errOut, name) {
			t.Errorf("half-configured Moov: %v, %s not named:\n%s", err, name, errOut)
		}
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

	pay := func(ref, op, phone string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", p.url+"/v1/transactions", strings.NewReader(fmt.Sprintf(
			`{"reference":%q,"amount":1500,"currency":"XAF","operator":%q,"phone_number":%q}`, ref, op, phone)))
		req.Header.Set("Authorization", "Bearer "+apiKey)
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
	settle := func(id, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for get(t, p, apiKey, id).Status != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s never became %s:\n%s", id, want, logs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	code, ok := pay("moov-1", "MOOV", moov.PhoneSuccess)
	code2, refused := pay("moov-2", "MOOV", moov.PhoneFailure)
	if code != 201 || ok["status"] != "PENDING" || code2 != 201 {
		t.Fatalf("create: %d %v; %d %v", code, ok, code2, refused)
	}
	settle(ok["id"].(string), "SUCCESS")
	settle(refused["id"].(string), "FAILED")
	if !strings.Contains(logs.String(), "source=poll") {
		t.Errorf("settled, but not by polling:\n%s", logs)
	}
	out, errOut, err = runWith(t, append(env, "MOMOPAY_MODE=live"), "", "transaction", "show", refused["id"].(string), "--db", db, "--json")
	if err != nil {
		t.Fatalf("transaction show: %v %s", err, errOut)
	}
	if shown := jsonOf(t, out); shown["failure_reason"] != "insufficient_balance" || shown["operator_code"] != "10" || shown["operator_ref"] == "" {
		t.Errorf("transaction show: %v", shown)
	}

	if code, body := pay("moov-3", "MOOV", moov.PhoneUnavailable); code != 503 || body["error"].(map[string]any)["retry_after"] != 2.0 {
		t.Errorf("Moov busy: %d %v", code, body)
	}
	if code, body := pay("moov-4", "AIRTEL", moov.PhoneSuccess); code != 422 || !strings.Contains(fmt.Sprint(body), "not configured") {
		t.Errorf("AIRTEL unconfigured: %d %v", code, body)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	l := logs.String()
	for _, secret := range []string{password, key, token} {
		if strings.Contains(l, secret) {
			t.Errorf("a credential reached the log:\n%s", l)
		}
	}
	for _, want := range []string{"operation=PushWithPending", "operation=getTransactionStatus", "transaction_id=" + ok["id"].(string), "latency_ms="} {
		if !strings.Contains(l, want) {
			t.Errorf("log lacks %q:\n%s", want, l)
		}
	}
}
