package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	adminLine     = regexp.MustCompile(`msg="admin listening" url=(http://\S+)`)
	simulatorLine = regexp.MustCompile(`msg="sandbox operator simulators listening" addr=(\S+)`)
)

// TestDeliveriesNeverReachOwnListeners: the sandbox delivers to loopback,
// so a merchant could point an endpoint at the admin listener and read
// /debug/pprof (which answers POST too) through the delivery's answer:
// the command line with its flags, goroutine stacks. The server refuses
// to connect to its own listeners; before, this delivery was "delivered"
// with the command line as its answer. The sandbox's operator simulators
// listen on loopback too, and are refused the same way.
func TestDeliveriesNeverReachOwnListeners(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "own.db")
	p := serve(t, db)
	key, merchant := demoCredentials(t, p)
	admin := adminLine.FindStringSubmatch(p.stderr.String())
	if admin == nil {
		t.Fatalf("no admin listener logged:\n%s", p.stderr)
	}
	simAddr := simulatorLine.FindStringSubmatch(p.stderr.String())
	if simAddr == nil {
		t.Fatalf("no simulator listener logged:\n%s", p.stderr)
	}
	sim := []string{"", "http://" + simAddr[1]}
	for _, target := range []string{admin[1] + "/debug/pprof/cmdline", p.url + "/healthz", sim[1] + "/airtel/auth/oauth2/token"} {
		if out, err := exec.Command(binary, "webhook", "create", "--merchant", merchant, "--url", target, "--db", db).CombinedOutput(); err != nil {
			t.Fatalf("webhook create %s: %v %s", target, err, out)
		}
	}
	create(t, p, key, "own-listeners", "+23560000001") // pays after about 2 s: one event to each endpoint

	var deliveries []struct {
		URL      string `json:"url"`
		Attempts []struct {
			StatusCode *int   `json:"status_code"`
			Error      string `json:"error"`
			Excerpt    string `json:"response_excerpt"`
			InProgress bool   `json:"in_progress"`
		} `json:"attempts"`
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := exec.Command(binary, "webhook", "deliveries", "--merchant", merchant, "--json", "--db", db).Output()
		if err != nil {
			t.Fatal(err)
		}
		var page struct {
			Deliveries json.RawMessage `json:"deliveries"`
		}
		if err := json.Unmarshal(out, &page); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		json.Unmarshal(page.Deliveries, &deliveries)
		attempted := 0
		for _, d := range deliveries {
			if len(d.Attempts) > 0 && !d.Attempts[0].InProgress {
				attempted++
			}
		}
		if attempted == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries not attempted in time: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, d := range deliveries {
		a := d.Attempts[0]
		if a.StatusCode != nil || a.Excerpt != "" || !strings.Contains(a.Error, "own listener") {
			t.Errorf("delivery to %s: status %v, answer %q, error %q; want refused as momopay's own listener", d.URL, a.StatusCode, a.Excerpt, a.Error)
		}
	}

	// "webhook test" sends from the command's own process: it refuses the
	// ports the server's variables name too (the simulators' port, drawn
	// by the server, is not one of them).
	out, err := exec.Command(binary, "webhook", "list", "--merchant", merchant, "--json", "--db", db).Output()
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Endpoints []struct{ ID, URL string } `json:"endpoints"`
	}
	if err := json.Unmarshal(out, &list); err != nil || len(list.Endpoints) != 3 {
		t.Fatalf("webhook list: %v %s", err, out)
	}
	for _, e := range list.Endpoints {
		if strings.HasPrefix(e.URL, sim[1]) {
			continue
		}
		cmd := exec.Command(binary, "webhook", "test", "--merchant", merchant, "--db", db, e.ID)
		cmd.Env = append(os.Environ(), "MOMOPAY_ADDR="+strings.TrimPrefix(p.url, "http://"), "MOMOPAY_ADMIN_ADDR="+strings.TrimPrefix(admin[1], "http://"))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "own listener") || strings.Contains(string(out), "momopay serve") {
			t.Errorf("webhook test to %s: %v\n%s\nwant refused as momopay's own listener", e.URL, err, out)
		}
	}
}
