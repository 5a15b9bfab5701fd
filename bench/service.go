package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// service is one running `momopay serve`.
type service struct {
	cmd   *exec.Cmd
	base  string
	admin string        // the admin listener's base URL ("" when it is off)
	done  chan struct{} // closed when the process has exited
}

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startService runs `momopay serve` on dbURL in sandbox mode with the
// per-key rate limit lifted, warnings only in the log (logPath) and no
// admin listener unless withAdmin (for CPU profiles), and waits until
// /healthz answers. Only flags that every version since the rate limit came
// have are used, so that -bin can be an older or newer build.
func startService(ctx context.Context, bin, dbURL string, ttl time.Duration, logPath string, withAdmin bool) (*service, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	adminAddr, adminBase := "off", ""
	if withAdmin {
		if adminAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		adminBase = "http://" + adminAddr
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--addr", addr, "--db", dbURL, "--mode", "sandbox",
		"--rate-limit", "0", "--admin-addr", adminAddr, "--log-level", "warn", "--log-format", "json",
		"--pending-ttl", ttl.String(), "--shutdown-grace", "5s")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	s := &service{cmd: cmd, base: "http://" + addr, admin: adminBase, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		logFile.Close()
		close(s.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("momopay serve exited at start: %s", tail(logPath))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
	}
	s.stop()
	return nil, fmt.Errorf("momopay serve did not answer /healthz within 60 s: %s", tail(logPath))
}

// stop ends the server as an operator would (SIGTERM), killing it if it
// has not exited after its shutdown grace and some margin.
func (s *service) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// profileCPU starts recording the server's CPU profile for d into path
// (through the admin listener's /debug/pprof/profile, so the service must
// have been started withAdmin) and returns a func that waits for it to be
// written.
func (s *service) profileCPU(ctx context.Context, path string, d time.Duration) (wait func() error) {
	done := make(chan error, 1)
	go func() {
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", s.admin, max(1, int(d.Seconds())))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
			return
		}
		f, err := os.Create(path)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, resp.Body)
		done <- errors.Join(err, f.Close())
	}()
	return func() error { return <-done }
}

// memory is the server's resident memory in bytes: now (VmRSS) and at its
// peak since it started (VmHWM), from /proc.
type memory struct {
	RSS, HWM int64
}

func (s *service) memory() (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return memory{}, err
	}
	return parseStatus(string(data))
}

// parseStatus reads VmRSS and VmHWM from a /proc/PID/status text.
func parseStatus(text string) (memory, error) {
	var m memory
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return memory{}, fmt.Errorf("unexpected %s line %q", name, sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return memory{}, err
		}
		if name == "VmRSS" {
			m.RSS = kb * 1024
		} else {
			m.HWM = kb * 1024
		}
	}
	if m.RSS == 0 || m.HWM == 0 {
		return memory{}, errors.New("no VmRSS or VmHWM in the status")
	}
	return m, nil
}

// cli runs a momopay command with --json on dbURL and decodes its output.
func cli(ctx context.Context, bin, dbURL, stdin string, out any, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, append(args, "--json", "--db", dbURL)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "MOMOPAY_MODE=sandbox") // webhook URLs on loopback, over http
	data, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("momopay %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return fmt.Errorf("momopay %s: %w", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("momopay %s printed %q: %w", strings.Join(args, " "), data, err)
	}
	return nil
}

// newMerchant creates a merchant and an API key for it with the CLI.
func newMerchant(ctx context.Context, bin, dbURL, name string) (merchant, error) {
	var m struct{ ID string }
	if err := cli(ctx, bin, dbURL, "a long enough password\n", &m, "merchant", "create", "--name", name,
		"--email", name+"@bench.example", "--password-stdin"); err != nil {
		return merchant{}, err
	}
	var k struct{ Key string }
	if err := cli(ctx, bin, dbURL, "", &k, "apikey", "create", "--merchant", m.ID); err != nil {
		return merchant{}, err
	}
	if m.ID == "" || k.Key == "" {
		return merchant{}, fmt.Errorf("merchant create or apikey create printed no id or key for %s", name)
	}
	return merchant{ID: m.ID, Key: k.Key}, nil
}

// addEndpoint registers url as a webhook endpoint of m with the CLI.
func addEndpoint(ctx context.Context, bin, dbURL string, m merchant, url string) error {
	var e struct{ ID string }
	if err := cli(ctx, bin, dbURL, "", &e, "webhook", "create", "--merchant", m.ID, "--url", url); err != nil {
		return err
	}
	if e.ID == "" {
		return fmt.Errorf("webhook create printed no id for %s", url)
	}
	return nil
}

// tail is the end of a log file, for an error message.
func tail(path string) string {
	data, _ := os.ReadFile(path)
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return strings.TrimSpace(string(data))
}
