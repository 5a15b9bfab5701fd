package api

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// EnvelopeErrors wraps the public listener so that the few answers Go's
// HTTP server writes by itself, before any handler runs, come in the API's
// error envelope like every other error instead of Go's plain text: a
// request line it cannot parse (GET /v1/transactions/%zz), headers over
// the server's limit (431), a malformed Host, Content-Length or
// Transfer-Encoding. net/http has no hook for those answers, so each
// connection's writes are watched for one: Go writes it in one piece,
// straight to the connection, as a status line followed by exactly
// goErrorHeaders. Every other write passes through untouched, and should
// a future Go write these answers differently they would pass through
// too, as plain text.
func EnvelopeErrors(ln net.Listener) net.Listener { return envelopeListener{ln} }

// goErrorHeaders is what net/http's conn.serve writes between the status
// line and the body of such an answer. No handler's answer has it: every
// one carries nosniff and a request id.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return envelopeConn{c}, nil
}

type envelopeConn struct{ net.Conn }

func (c envelopeConn) Write(p []byte) (int, error) {
	if answer := envelopeOf(p); answer != nil {
		if _, err := c.Conn.Write(answer); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite lets the server half-close the connection after such an
// answer, as it does on a bare TCP connection, so that the client reads
// the answer before the connection ends.
func (c envelopeConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// envelopeOf returns the enveloped answer for one of Go's own plain-text
// error answers, or nil when p is anything else.
func envelopeOf(p []byte) []byte {
	const proto = "HTTP/1.1 "
	if len(p) < len(proto)+3 || !bytes.HasPrefix(p, []byte(proto)) || p[len(proto)] < '4' {
		return nil
	}
	end := bytes.IndexByte(p, '\r')
	if end < 0 || !bytes.HasPrefix(p[end:], []byte(goErrorHeaders)) {
		return nil
	}
	status, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil || status < 400 || status > 599 {
		return nil
	}
	// Go's body repeats the status line, with a reason after ": " for
	// some ("400 Bad Request: missing required Host header"), or is the
	// reason alone ("Unsupported transfer encoding").
	reason := string(p[end+len(goErrorHeaders):])
	if rest, ok := strings.CutPrefix(reason, strconv.Itoa(status)+" "+http.StatusText(status)); ok {
		reason = strings.TrimPrefix(rest, ": ")
	}
	e := errorObject{Status: status, Code: strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")), Message: reason}
	switch {
	case status == http.StatusBadRequest:
		// The contract's "wrong format", with fields as on every
		// VALIDATION_ERROR.
		e.Code, e.Message = codeValidation, "malformed HTTP request"
		if reason != "" {
			e.Message += ": " + reason
		}
		e.Fields = map[string]string{"request": "is not a well-formed HTTP/1.1 request"}
	case status == http.StatusRequestHeaderFieldsTooLarge:
		e.Message = "the request's headers are too large"
	case reason == "":
		e.Message = http.StatusText(status)
	}
	body, _ := encodeJSON(errorBody{Error: e}) // with its newline, as writeJSON's
	var b bytes.Buffer
	b.WriteString(proto + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	b.WriteString("Content-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n")
	// A request id as on every other answer (none was logged: no handler
	// ran), so that a client which records it always finds one.
	b.WriteString("X-Request-Id: " + uuid.NewString() + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}
