package client_test

// The README's Go programs are the examples of example_test.go, word for
// word. These tests keep them so, build every Go program of the README and
// docs/ as a merchant would (in a module of their own that depends on this
// one through a replace directive, as the README explains), and run the quick
// start against a real server.

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/momopay/momopay/client"
	"github.com/momopay/momopay/internal/testserver"
)

// readmeExamples are the examples the README shows as complete programs.
var readmeExamples = []string{"Example", "Example_webhookReceiver"}

func TestReadmeShowsTheExamples(t *testing.T) {
	programs := goPrograms(t, "../README.md")
	for _, name := range readmeExamples {
		want := "func main() {\n" + exampleStatements(t, name) + "}\n"
		found := false
		for _, p := range programs {
			found = found || strings.HasSuffix(p, want)
		}
		if !found {
			t.Errorf("README.md has no Go program whose main is the body of %s in example_test.go; copy it exactly:\n%s", name, want)
		}
	}
}

func TestDocProgramsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(goPrograms(t, "../README.md")); n < len(readmeExamples) {
		t.Fatalf("README.md shows %d Go programs, want at least %d", n, len(readmeExamples))
	}
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var programs, from []string
	for _, doc := range append([]string{"../README.md"}, docs...) {
		for _, p := range goPrograms(t, doc) {
			programs, from = append(programs, p), append(from, doc)
		}
	}
	for i, p := range programs {
		// A shop's own module, depending on a local checkout the way the
		// README says.
		dir := t.TempDir()
		gomod := "module example.com/shop\n\ngo 1.26\n\nrequire github.com/momopay/momopay v0.0.0\n\n" +
			"replace github.com/momopay/momopay => " + root + "\n"
		for name, content := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(p)} {
			if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "shop"), ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("a Go program of %s does not build: %v\n%s\n%s", from[i], err, out, p)
		}
	}
}

// TestQuickstartAgainstServer runs the README's quick start (Example) on a
// real server, twice: the second run meets 409 for its reference and reads
// the payment made by the first instead of paying again.
func TestQuickstartAgainstServer(t *testing.T) {
	for _, engine := range testserver.Engines {
		t.Run(engine, func(t *testing.T) {
			srv := testserver.Start(t, testserver.Options{DB: engine})
			t.Setenv("MOMOPAY_URL", srv.URL)
			t.Setenv("MOMOPAY_API_KEY", srv.APIKey)

			if got, want := captureStdout(t, Example), "order-1001 PENDING\norder-1001 SUCCESS\ncollected today: 1500 XAF\n"; got != want {
				t.Errorf("first run printed\n%swant\n%s", got, want)
			}
			if got, want := captureStdout(t, Example), "order-1001 SUCCESS\norder-1001 SUCCESS\ncollected today: 1500 XAF\n"; got != want {
				t.Errorf("second run printed\n%swant\n%s", got, want)
			}
		})
	}
}

// TestQuickstartRefusesAnotherOrder runs the quick start where its reference
// already holds a payment for another amount: it must stop rather than carry
// on with that payment as if it were this order. Example ends with
// log.Fatal, so it runs in a child process.
func TestQuickstartRefusesAnotherOrder(t *testing.T) {
	if os.Getenv("MOMOPAY_QUICKSTART_CHILD") == "1" {
		Example()
		return
	}
	srv := testserver.Start(t, testserver.Options{})
	c := client.New(srv.APIKey, client.WithBaseURL(srv.URL))
	earlier, err := c.CreateTransaction(context.Background(), client.CreateTransactionParams{
		Reference: "order-1001", Amount: 9000, Operator: client.OperatorAirtel, PhoneNumber: "+23560000001",
	})
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestQuickstartRefusesAnotherOrder$")
	cmd.Env = append(os.Environ(), "MOMOPAY_QUICKSTART_CHILD=1", "MOMOPAY_URL="+srv.URL, "MOMOPAY_API_KEY="+srv.APIKey)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if _, exited := err.(*exec.ExitError); !exited {
		t.Errorf("the quick start ran to its end (err %v) on the %d XAF payment %s: printed\n%s", err, earlier.Amount, earlier.ID, stdout.String())
	}
	if strings.Contains(stdout.String(), "order-1001") {
		t.Errorf("the quick start carried on with another order's payment: printed\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "not this order") {
		t.Errorf("stderr = %q, want the reason it stopped", stderr.String())
	}
}

// captureStdout runs fn with os.Stdout redirected, as go test does for
// examples with an Output comment.
func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	defer func() { os.Stdout = saved }()
	fn()
	w.Close()
	return string(<-done)
}

// goPrograms returns the ```go blocks of a Markdown file that are whole
// programs.
func goPrograms(t *testing.T, path string) []string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var programs []string
	blocks := strings.Split(string(doc), "```go\n")
	for _, b := range blocks[1:] {
		code, _, ok := strings.Cut(b, "```\n")
		if ok && strings.HasPrefix(code, "package main\n") {
			programs = append(programs, code)
		}
	}
	return programs
}

// exampleStatements returns the body of the named function in
// example_test.go: the lines between its braces, as main's body would be.
func exampleStatements(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name {
			continue
		}
		start, end := fset.Position(fn.Body.Lbrace).Offset+1, fset.Position(fn.Body.Rbrace).Offset
		return string(bytes.TrimPrefix(src[start:end], []byte("\n")))
	}
	t.Fatalf("example_test.go has no func %s", name)
	return ""
}
