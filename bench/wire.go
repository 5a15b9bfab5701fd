package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// wire is one keep-alive HTTP/1.1 connection owned by one closed-loop
// worker. It writes each request itself and reads the answer with
// http.ReadResponse, without net/http's Transport: the Transport's pool,
// and the two goroutines per connection that each request is handed
// between, made the load generator take about a quarter of this 2-core
// machine during the get scenario, CPU the server under test and its
// database then lacked (pgbench's client, which the ratios compare with,
// is lean C). The requests and answers are the same on the wire.
type wire struct {
	host string // host:port, dialled and sent as Host
	conn net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
}

// wires hands each closed-loop worker its own wire to the service.
type wires struct {
	host     string
	mu       sync.Mutex
	byWorker []*wire
}

// newWires connects to base, an http:// address.
func newWires(base string) (*wires, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("load generator: %q is not an http:// address", base)
	}
	return &wires{host: u.Host}, nil
}

// of returns worker w's wire, made on first use.
func (ws *wires) of(w int) *wire {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for len(ws.byWorker) <= w {
		ws.byWorker = append(ws.byWorker, &wire{host: ws.host})
	}
	return ws.byWorker[w]
}

// close ends every worker's connection.
func (ws *wires) close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, w := range ws.byWorker {
		w.drop()
	}
}

func (w *wire) drop() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

// do sends one request and decodes a 2xx answer into out (when not nil),
// as api.do does. A failure without an answer closes the connection; the
// next request opens another.
func (w *wire) do(ctx context.Context, method, path, key string, body []byte, out any) (int, error) {
	code, err := w.roundTrip(ctx, method, path, key, body, out)
	if err != nil && code == 0 {
		w.drop()
	}
	return code, err
}

func (w *wire) roundTrip(ctx context.Context, method, path, key string, body []byte, out any) (int, error) {
	if w.conn == nil {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", w.host)
		if err != nil {
			return 0, err
		}
		w.conn, w.br, w.bw = c, bufio.NewReaderSize(c, 16<<10), bufio.NewWriterSize(c, 4<<10)
	}
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	w.conn.SetDeadline(deadline)
	w.bw.WriteString(method + " " + path + " HTTP/1.1\r\nHost: " + w.host + "\r\nAuthorization: Bearer " + key + "\r\n")
	if body != nil {
		w.bw.WriteString("Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
		w.bw.Write(body)
	} else {
		w.bw.WriteString("\r\n")
	}
	if err := w.bw.Flush(); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(w.br, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var data []byte
	if out != nil || resp.StatusCode/100 != 2 {
		data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return 0, err
	}
	if resp.Close {
		w.drop()
	}
	return decodeAnswer(method, path, resp.StatusCode, data, out)
}
