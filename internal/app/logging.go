package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// Log formats and levels of --log-format and --log-level.
const (
	LogJSON = "json"
	LogText = "text"
)

// NewLogger builds the service log: JSON lines or logfmt-like text, at
// level (debug, info, warn, error) and above. An empty format means JSON
// unless w is a terminal, where a person reads text more easily.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var problems []error // both named at once when both are wrong
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lv = slog.LevelDebug
	case "", "info":
		lv = slog.LevelInfo
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		problems = append(problems, fmt.Errorf("--log-level %q is not a level: use debug, info, warn or error (env MOMOPAY_LOG_LEVEL)", level))
	}
	if format == "" {
		format = defaultLogFormat(w)
	}
	if format != LogJSON && format != LogText {
		problems = append(problems, fmt.Errorf("--log-format %q is not a format: use json or text (env MOMOPAY_LOG_FORMAT)", format))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == LogText {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}

// defaultLogFormat is the log format for w when none is given: JSON for
// a log collector, text where a person reads it (a terminal).
func defaultLogFormat(w io.Writer) string {
	if isTerminal(w) {
		return LogText
	}
	return LogJSON
}

// isTerminal reports whether w is a character device (a terminal), with
// the standard library alone.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// checkLogging lets momopay config check name a bad --log-format or
// --log-level with the others, as serve would refuse it.
func checkLogging(_ context.Context, s settings) []string {
	if !s.has("log-format") {
		return nil
	}
	if _, err := NewLogger(io.Discard, s.str("log-format"), s.str("log-level")); err != nil {
		return strings.Split(err.Error(), "\n") // errors.Join's lines, one problem each
	}
	return nil
}

func init() { configChecks = append(configChecks, configCheck{run: checkLogging}) }
