// Package auth checks bearer tokens on gRPC calls (and therefore on REST
// calls, which the gateway forwards over gRPC) and attaches the caller's
// principal to the context. Tokens are compared in constant time and never
// logged.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Tokens maps bearer tokens to the principals they authenticate.
type Tokens struct {
	entries []entry
}

type entry struct {
	principal string
	sum       [32]byte
}

// NewTokens builds a token set; principals name callers in history and logs.
func NewTokens(byPrincipal map[string]string) (*Tokens, error) {
	t := &Tokens{}
	for principal, token := range byPrincipal {
		if err := t.Add(principal, token); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ParseTokens reads "principal:token,principal:token".
func ParseTokens(spec string) (*Tokens, error) {
	t := &Tokens{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		principal, token, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("token entry %q: want principal:token", redact(item))
		}
		if err := t.Add(principal, token); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func redact(item string) string {
	if p, _, ok := strings.Cut(item, ":"); ok {
		return p + ":<redacted>"
	}
	if len(item) > 4 {
		return item[:2] + "…"
	}
	return "…"
}

// Add registers one token.
func (t *Tokens) Add(principal, token string) error {
	principal, token = strings.TrimSpace(principal), strings.TrimSpace(token)
	if principal == "" {
		return errors.New("token entry: empty principal")
	}
	if len(token) < 16 {
		return fmt.Errorf("token for %q: must be at least 16 characters", principal)
	}
	t.entries = append(t.entries, entry{principal: principal, sum: sha256.Sum256([]byte(token))})
	return nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Authenticate returns the principal of a valid token.
func (t *Tokens) Authenticate(token string) (string, bool) {
	sum := sha256.Sum256([]byte(token))
	principal, found := "", 0
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			principal, found = e.principal, 1
		}
	}
	return principal, found == 1
}

type principalKey struct{}

// WithPrincipal attaches the authenticated caller to ctx.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Principal returns who is calling, or "" when unauthenticated.
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// Exempt reports methods callable without a token: health checking and
// reflection, which reveal no data.
func Exempt(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/grpc.health.v1.Health/") ||
		strings.HasPrefix(fullMethod, "/grpc.reflection.")
}

// BearerFromMetadata extracts the token of an "authorization: Bearer x" header.
func BearerFromMetadata(ctx context.Context) (string, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "bearer") && strings.TrimSpace(token) != "" {
			return strings.TrimSpace(token), true
		}
	}
	return "", false
}

var errUnauthenticated = status.Error(codes.Unauthenticated, "missing or invalid bearer token: send Authorization: Bearer <token>")

func (t *Tokens) authenticate(ctx context.Context, method string) (context.Context, error) {
	if Exempt(method) {
		return ctx, nil
	}
	token, ok := BearerFromMetadata(ctx)
	if !ok {
		return nil, errUnauthenticated
	}
	principal, ok := t.Authenticate(token)
	if !ok {
		return nil, errUnauthenticated
	}
	return WithPrincipal(ctx, principal), nil
}

// UnaryServerInterceptor rejects calls without a valid token.
func (t *Tokens) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := t.authenticate(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// StreamServerInterceptor rejects streams without a valid token.
func (t *Tokens) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, err := t.authenticate(ss.Context(), info.FullMethod)
		if err != nil {
			return err
		}
		return handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
	}
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }

// Bearer is per-RPC credentials that send a token; used between services.
type Bearer string

var _ credentials.PerRPCCredentials = Bearer("")

// GetRequestMetadata implements credentials.PerRPCCredentials.
func (b Bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

// RequireTransportSecurity is false: services talk over loopback or a
// private network; put TLS in front when that is not so.
func (Bearer) RequireTransportSecurity() bool { return false }

// NewToken returns a random 256-bit token, hex-encoded.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// DevTokenFile is where EnsureDevToken keeps the development token.
const DevTokenFile = "dev-token"

// EnsureDevToken reads dataDir/dev-token, creating it (mode 0600) with a
// fresh token when absent. created tells whether it was just made.
func EnsureDevToken(dataDir string) (token, path string, created bool, err error) {
	path = filepath.Join(dataDir, DevTokenFile)
	raw, err := os.ReadFile(path)
	if err == nil {
		token = strings.TrimSpace(string(raw))
		if len(token) >= 16 {
			return token, path, false, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", path, false, fmt.Errorf("read %s: %w", path, err)
	}
	token, err = NewToken()
	if err != nil {
		return "", path, false, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", path, false, fmt.Errorf("create %s: %w", dataDir, err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", path, false, fmt.Errorf("write %s: %w", path, err)
	}
	return token, path, true, nil
}
