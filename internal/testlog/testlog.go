// Package testlog is where tests collect output that other goroutines
// write while the test reads it: a logger's lines, or a child process's
// stdout and stderr copied by os/exec. It is for tests only.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for one writer and readers at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
