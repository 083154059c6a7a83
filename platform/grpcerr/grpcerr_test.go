package grpcerr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Marker sentinels classify; callers get one clean sentence without them
// (issue 16 §7), while meaningful sentinels ("not found") stay.
func TestMarkersLeaveTheMessage(t *testing.T) {
	errInvalid := errors.New("invalid argument")
	errPrecondition := errors.New("failed precondition")
	errNotFound := errors.New("not found")
	table := Table{
		{Err: errNotFound, Code: codes.NotFound},
		{Err: errInvalid, Code: codes.InvalidArgument, Marker: true},
		{Err: errPrecondition, Code: codes.FailedPrecondition, Marker: true},
	}
	cases := []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{fmt.Errorf("service x cannot be activated while Busy: wait for status Ready: %w", errPrecondition), codes.FailedPrecondition,
			"service x cannot be activated while Busy: wait for status Ready"},
		{fmt.Errorf("register version: %w", fmt.Errorf("bad: %w: %w", errors.New("pkg"), errInvalid)), codes.InvalidArgument, "register version: bad: pkg"},
		{fmt.Errorf("a: %s: %w", "b: invalid argument", errInvalid), codes.InvalidArgument, "a: b"},
		{fmt.Errorf("service urn:x: %w", errNotFound), codes.NotFound, "service urn:x: not found"},
	}
	for _, c := range cases {
		got := table.ToStatus(c.err)
		require.Equal(t, c.code, status.Code(got), c.err.Error())
		require.Equal(t, c.msg, status.Convert(got).Message(), c.err.Error())
	}
	require.Equal(t, "invalid argument", status.Convert(table.ToStatus(errInvalid)).Message(), "a bare marker stays")
}

// No answer is larger than MaxMessage, whatever a handler quoted: mapped
// errors and status errors alike are cut (issue 25 §8).
func TestMessagesAreBounded(t *testing.T) {
	errInvalid := errors.New("invalid argument")
	table := Table{{Err: errInvalid, Code: codes.InvalidArgument, Marker: true}}
	huge := strings.Repeat("x", 15<<20)
	for name, err := range map[string]error{
		"mapped": fmt.Errorf("sortAsc %q: %w", huge, errInvalid),
		"status": status.Error(codes.InvalidArgument, "sortAsc "+huge),
	} {
		got := status.Convert(table.ToStatus(err))
		require.Equal(t, codes.InvalidArgument, got.Code(), name)
		require.LessOrEqual(t, len(got.Message()), MaxMessage+64, name)
		require.Contains(t, got.Message(), "(message cut: ", name)
	}
	short := status.Error(codes.NotFound, "service x: not found")
	require.Equal(t, short, table.ToStatus(short), "a short status passes unchanged")
}
