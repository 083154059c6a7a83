// Package grpcerr converts domain errors to gRPC status errors through one
// table per service, at the server boundary (etcd's togRPCError).
package grpcerr

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/platform/echo"
)

// Rule maps every error that errors.Is Err to Code.
type Rule struct {
	Err  error
	Code codes.Code
	// Marker: Err only classifies (e.g. "invalid argument"); its text is
	// transport noise to a caller, who gets the code, so the message
	// leaves it out ("…: failed precondition" becomes "…").
	Marker bool
}

// Table is a service's complete mapping, checked in order.
type Table []Rule

// Code returns the code err maps to, and whether a rule matched.
func (t Table) Code(err error) (codes.Code, bool) {
	for _, r := range t {
		if errors.Is(err, r.Err) {
			return r.Code, true
		}
	}
	return codes.Unknown, false
}

// message is err's text without the markers it wraps: one clean sentence.
func (t Table) message(err error) string {
	msg := err.Error()
	for changed := true; changed; {
		changed = false
		for _, r := range t {
			if !r.Marker || !errors.Is(err, r.Err) {
				continue
			}
			noise := ": " + r.Err.Error()
			if trimmed, ok := strings.CutSuffix(msg, noise); ok && trimmed != "" {
				msg, changed = trimmed, true
			}
			if strings.Contains(msg, noise+": ") {
				msg, changed = strings.ReplaceAll(msg, noise+": ", ": "), true
			}
		}
	}
	return msg
}

// internalMessage is what callers see for an unmapped error; the real error
// is logged, since it may hold internals a caller cannot act on.
const internalMessage = "internal error; the server log has the details"

// MaxMessage bounds the message of every status a server answers with, in
// bytes. Messages name what was wrong and quote short values only
// (echo.Quote); this is the backstop for a value quoted whole by mistake,
// so no caller can make an answer (or its log line) as large as its
// request.
const MaxMessage = 64 << 10

// ToStatus converts err for the wire. Status errors keep their code and
// details; context errors keep their codes; mapped errors keep their
// message; anything else becomes Internal with a masked message. Every
// message is cut at MaxMessage bytes.
func (t Table) ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok {
		return bounded(st, err)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, echo.Cut(err.Error(), MaxMessage))
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, echo.Cut(err.Error(), MaxMessage))
	}
	if code, ok := t.Code(err); ok {
		return status.Error(code, echo.Cut(t.message(err), MaxMessage))
	}
	return status.Error(codes.Internal, internalMessage)
}

// bounded returns err unchanged when its message is within MaxMessage,
// else the same status with the message cut.
func bounded(st *status.Status, err error) error {
	if len(st.Message()) <= MaxMessage {
		return err
	}
	p := st.Proto()
	p.Message = echo.Cut(p.GetMessage(), MaxMessage)
	return status.ErrorProto(p)
}

// ServerError is what a server answers for a handler's err: its status by
// the table, an internal error logged with its cause (which the caller
// never sees). grpcx's server applies it to every call.
func (t Table) ServerError(ctx context.Context, log *slog.Logger, method string, err error) error {
	out := t.ToStatus(err)
	if status.Code(out) == codes.Internal {
		log.ErrorContext(ctx, "internal error", "method", method, "error", err)
	}
	return out
}
