package app

import (
	"context"
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
		return nil, fmt.Errorf("--log-level %q is not a level: use debug, info, warn or error (env MOMOPAY_LOG_LEVEL)", level)
	}
	if format == "" {
		format = LogJSON
		if isTerminal(w) {
			format = LogText
		}
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case LogJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case LogText:
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q is not a format: use json or text (env MOMOPAY_LOG_FORMAT)", format)
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
		return []string{err.Error()}
	}
	return nil
}

func init() { configChecks = append(configChecks, configCheck{run: checkLogging}) }
