package testserver

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
)

// TrustTLSServers makes this process, and every process it starts, trust
// the certificate of httptest's TLS servers (one fixed certificate for
// 127.0.0.1, ::1 and example.com) as if a public authority had issued it:
// live mode talks to operators over https only, and the tests' fake
// operators are httptest.NewTLSServer. It writes the certificate to a file
// in dir and names it in SSL_CERT_FILE, which Go reads once, when the
// process first verifies a certificate: call it from TestMain, before any
// test runs. The file replaces the system's authorities, which no test
// needs: they reach nothing beyond loopback.
func TrustTLSServers(dir string) error {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	cert := srv.Certificate()
	srv.Close()
	file := filepath.Join(dir, "httptest-ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		return err
	}
	return os.Setenv("SSL_CERT_FILE", file)
}
