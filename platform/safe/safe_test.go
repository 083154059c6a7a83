package safe

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCallContainsPanics(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var items []int
	err := Call(log, "step apply of activate", func() error {
		_ = items[3] // an index out of range panics
		return nil
	})
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.EqualError(t, err, "panic in step apply of activate: runtime error: index out of range [3] with length 0")
	require.Contains(t, logs.String(), "recovered panic")
	require.Contains(t, logs.String(), "safe_test.go", "the stack is logged")

	want := errors.New("plain failure")
	require.Equal(t, want, Call(log, "x", func() error { return want }), "errors pass through")
	require.NoError(t, Call(nil, "x", func() error { return nil }))
}
