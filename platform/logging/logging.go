// Package logging builds the process's slog logger from flags.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// New returns a logger writing format ("text" or "json") at level
// ("debug", "info", "warn", "error").
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case "", "text":
		return slog.New(traceHandler{slog.NewTextHandler(w, opts)}), nil
	case "json":
		return slog.New(traceHandler{slog.NewJSONHandler(w, opts)}), nil
	default:
		return nil, fmt.Errorf("log format %q: want text or json", format)
	}
}

// Discard is a logger for tests that do not read logs.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
