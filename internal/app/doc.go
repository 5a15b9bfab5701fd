// Package app is the one place that wires momopay together: configuration
// in, a running HTTP server and background workers out, plus the command
// line that operators and scripts use. main only calls Run, so tests start
// the whole program in-process.
//
// The command line keeps a few promises that tests hold it to: one table
// (commands, in cli.go) gives every command's full syntax, and help in any
// form goes to stdout with exit status 0; errors are returned, never
// printed, so that main prints each once; every command that offers --json
// prints one JSON object; and only serve and migrate create a database.
package app
