// Package app is the one place that wires momopay together: configuration
// in, a running HTTP server and background workers out, plus the command
// line that operators and scripts use. main only calls Run, so tests start
// the whole program in-process.
package app
