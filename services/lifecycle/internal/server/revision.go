package server

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/vcfsm/vcfsm/platform/echo"
	"github.com/vcfsm/vcfsm/platform/grpcx"
)

// DefaultMinRevisionWait bounds how long a call that sends
// grpcx.MinRevisionHeader waits for this replica's view to reach it.
const DefaultMinRevisionWait = 5 * time.Second

// Revisions gives every unary call read-your-writes across replicas: a
// call carrying grpcx.MinRevisionHeader waits (up to wait) until this
// replica's view of the store has reached that revision, else fails
// Unavailable; every answer carries the revision it reflects in
// grpcx.RevisionHeader. GetService's answers whose view is cached go out
// in the wire format kept with it (viewCache). Install it with
// grpcx.Server.InterceptUnary.
func (h *Handler) Revisions(wait time.Duration) grpc.UnaryServerInterceptor {
	if wait <= 0 {
		wait = DefaultMinRevisionWait
	}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := h.waitMinRevision(ctx, wait); err != nil {
			return nil, err
		}
		resp, err := handler(ctx, req)
		if err == nil {
			if rev := h.m.Revision(); rev > 0 {
				_ = grpc.SetHeader(ctx, h.revHeader.md(rev))
			}
			if wire, ok := h.views.encodedAnswer(resp); ok {
				return wire, nil
			}
		}
		return resp, err
	}
}

// waitMinRevision waits for the revision the call asks for, if any.
func (h *Handler) waitMinRevision(ctx context.Context, wait time.Duration) error {
	// One key, without copying the call's whole metadata.
	vals := metadata.ValueFromIncomingContext(ctx, grpcx.MinRevisionHeader)
	if len(vals) == 0 || vals[0] == "" {
		return nil
	}
	rev, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil || rev < 0 {
		return invalid("X-Vcfsm-Min-Revision %s is not a store revision: send back the X-Vcfsm-Revision of an earlier answer", echo.Quote(vals[0]))
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	err = h.m.WaitRevision(wctx, rev)
	if err != nil && ctx.Err() != nil {
		return ctx.Err() // the caller gave up, not the wait
	}
	return err
}

// revisionHeader keeps the last revision's header: answers between two
// commits all carry the same one, and grpc only reads it (SetHeader
// copies it into the call's header).
type revisionHeader struct {
	last atomic.Pointer[revisionMD]
}

type revisionMD struct {
	rev int64
	md  metadata.MD
}

func (r *revisionHeader) md(rev int64) metadata.MD {
	if l := r.last.Load(); l != nil && l.rev == rev {
		return l.md
	}
	// A literal MD: the key is already lower case.
	md := metadata.MD{grpcx.RevisionHeader: {strconv.FormatInt(rev, 10)}}
	r.last.Store(&revisionMD{rev: rev, md: md})
	return md
}
