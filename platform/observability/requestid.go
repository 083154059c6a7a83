package observability

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// Request ids: the gateway accepts a caller's X-Request-Id (or makes one),
// returns it, and every gRPC call it causes carries it as metadata, so one
// id finds a request's lines in every service's access log.
const (
	RequestIDHeader   = "X-Request-Id"
	RequestIDMetadata = "x-request-id"
	maxRequestIDLen   = 128
)

// request is what the access log learns while a REST request or a gRPC
// call runs. It is the one context value the middleware adds, so a call
// costs one allocation for all of it.
type request struct {
	id        string
	route     string
	principal string
}

type requestKey struct{}

func withRequest(ctx context.Context, r *request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

func requestFrom(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// WithRequestID attaches a request id to ctx.
func WithRequestID(ctx context.Context, id string) context.Context {
	return withRequest(ctx, &request{id: id})
}

// RequestID returns the context's request id, or "".
func RequestID(ctx context.Context) string {
	if r := requestFrom(ctx); r != nil {
		return r.id
	}
	return ""
}

// AcceptRequestID returns a caller's id when it is usable in a log line
// (at most 128 printable ASCII characters, no spaces or quotes), and a new
// random one otherwise.
func AcceptRequestID(id string) string {
	if id != "" && len(id) <= maxRequestIDLen && printable(id) {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
