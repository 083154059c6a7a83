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
	"google.golang.org/grpc/tap"
)

// Tokens maps bearer tokens to the principals they authenticate and the
// roles those principals hold.
type Tokens struct {
	entries []entry
}

type entry struct {
	id  Identity
	sum [32]byte
}

// Identity is an authenticated caller.
type Identity struct {
	Principal string
	Role      Role
}

// NewTokens builds a token set of admin tokens; principals name callers in
// history and logs.
func NewTokens(byPrincipal map[string]string) (*Tokens, error) {
	t := &Tokens{}
	for principal, token := range byPrincipal {
		if err := t.Add(principal, token); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ParseTokens reads --tokens: entries separated by commas or newlines,
// each "principal:role:token" or "principal:token" (role admin). Blank
// entries and entries starting with # are skipped. An error names the
// entry by its position, never by its content: a malformed entry may hold
// a token in any of its fields (principal:token:role, fields swapped).
func ParseTokens(spec string) (*Tokens, error) {
	t := &Tokens{}
	n := 0
	for _, item := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == '\n' }) {
		item = strings.TrimSpace(item)
		if item == "" || strings.HasPrefix(item, "#") {
			continue
		}
		n++
		if err := t.parseEntry(item); err != nil {
			return nil, fmt.Errorf("token entry %d: %w", n, err)
		}
	}
	return t, nil
}

// AddLines adds the entries of a tokens file: one entry per line (a line
// may also list several, comma-separated), # comments and blank lines
// skipped. An error names the line, never its content.
func (t *Tokens) AddLines(text string) error {
	for n, line := range strings.Split(text, "\n") {
		for _, item := range strings.Split(line, ",") {
			item = strings.TrimSpace(item)
			if item == "" || strings.HasPrefix(item, "#") {
				continue
			}
			if err := t.parseEntry(item); err != nil {
				return fmt.Errorf("line %d: %w", n+1, err)
			}
		}
	}
	return nil
}

// parseEntry adds one entry. Its errors say which field is wrong and what
// was expected, and quote nothing of the entry.
func (t *Tokens) parseEntry(item string) error {
	parts := strings.SplitN(item, ":", 3)
	switch len(parts) {
	case 2:
		return t.add(parts[0], RoleAdmin, parts[1])
	case 3:
		// A mistyped role must not silently become part of an admin
		// token, so a second colon always means a role.
		role, err := ParseRole(parts[1])
		if err != nil {
			return errors.New("the second field is not a role (admin, operator, viewer or service): entries are principal:role:token")
		}
		return t.add(parts[0], role, parts[2])
	}
	return errors.New("want principal:role:token or principal:token")
}

// Add registers one admin token.
func (t *Tokens) Add(principal, token string) error {
	return t.AddRole(principal, RoleAdmin, token)
}

// AddRole registers one token for principal with role.
func (t *Tokens) AddRole(principal string, role Role, token string) error {
	if _, err := ParseRole(string(role)); err != nil {
		return fmt.Errorf("token for %q: %w", principal, err)
	}
	if err := t.add(principal, role, token); err != nil {
		return fmt.Errorf("token for %q: %w", principal, err)
	}
	return nil
}

func (t *Tokens) add(principal string, role Role, token string) error {
	principal, token = strings.TrimSpace(principal), strings.TrimSpace(token)
	if principal == "" {
		return errors.New("empty principal")
	}
	if len(token) < 16 {
		return errors.New("the token is shorter than 16 characters")
	}
	t.entries = append(t.entries, entry{id: Identity{Principal: principal, Role: role}, sum: sha256.Sum256([]byte(token))})
	return nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.entries) }

// Authenticate returns the principal of a valid token.
func (t *Tokens) Authenticate(token string) (string, bool) {
	id, ok := t.Lookup(token)
	return id.Principal, ok
}

// Lookup returns the identity of a valid token, comparing in constant time
// against every entry.
func (t *Tokens) Lookup(token string) (Identity, bool) {
	// Copied into a stack buffer: converting the string would allocate on
	// every call for tokens longer than the compiler's small buffer.
	var buf [256]byte
	sum := sha256.Sum256(append(buf[:0], token...))
	var id Identity
	found := 0
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			id, found = e.id, 1
		}
	}
	return id, found == 1
}

type identityKey struct{}

// WithPrincipal attaches an authenticated admin caller to ctx.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return WithIdentity(ctx, Identity{Principal: principal, Role: RoleAdmin})
}

// WithIdentity attaches the authenticated caller to ctx.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// Principal returns who is calling, or "" when unauthenticated.
func Principal(ctx context.Context) string {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id.Principal
}

// CallerIdentity returns the authenticated caller, if any.
func CallerIdentity(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Exempt reports methods callable without a token: health checking and
// reflection, which reveal no data.
func Exempt(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/grpc.health.v1.Health/") ||
		strings.HasPrefix(fullMethod, "/grpc.reflection.")
}

// BearerFromMetadata extracts the token of an "authorization: Bearer x" header.
func BearerFromMetadata(ctx context.Context) (string, bool) {
	// ValueFromIncomingContext reads one key without copying the call's
	// whole metadata (this runs on every call).
	return bearerOf(metadata.ValueFromIncomingContext(ctx, "authorization"))
}

var errUnauthenticated = status.Error(codes.Unauthenticated, "missing or invalid bearer token: send Authorization: Bearer <token>")

// bearerOf extracts the token of an "authorization: Bearer x" header.
func bearerOf(values []string) (string, bool) {
	for _, v := range values {
		scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
		if ok && strings.EqualFold(scheme, "bearer") && strings.TrimSpace(token) != "" {
			return strings.TrimSpace(token), true
		}
	}
	return "", false
}

// identify checks the authorization header values of a call to method: the
// caller's identity when the token is valid and its role may call the
// method; ok is false for an exempt method called without a valid token.
func (t *Tokens) identify(authorization []string, method string) (id Identity, ok bool, err error) {
	token, found := bearerOf(authorization)
	if found {
		id, found = t.Lookup(token)
	}
	if Exempt(method) {
		return id, found, nil
	}
	if !found {
		return Identity{}, false, errUnauthenticated
	}
	if err := Authorize(id, method); err != nil {
		return Identity{}, false, status.Error(codes.PermissionDenied, err.Error())
	}
	return id, true, nil
}

// Tap authenticates a call from its headers, before grpc reads any of its
// message: install it with grpc.InTapHandle. A call without a valid token
// is refused Unauthenticated, one whose role lacks the method's permission
// PermissionDenied, and grpc answers without reading (or buffering) the
// message. Exempt methods pass without a token. The identity rides in the
// returned context, so the interceptors do not look the token up again.
// It runs on the connection's reading goroutine: it only hashes and
// compares.
func (t *Tokens) Tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	id, ok, err := t.identify(info.Header.Get("authorization"), info.FullMethodName)
	if err != nil {
		return nil, err
	}
	if ok {
		ctx = context.WithValue(ctx, tappedKey{}, id)
	}
	return ctx, nil
}

// tappedKey holds the identity Tap found; only this package sets it.
type tappedKey struct{}

// TappedIdentity returns the identity Tap found for the call, if its token
// was valid.
func TappedIdentity(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(tappedKey{}).(Identity)
	return id, ok
}

func (t *Tokens) authenticate(ctx context.Context, method string) (context.Context, error) {
	if id, ok := ctx.Value(tappedKey{}).(Identity); ok {
		return WithIdentity(ctx, id), nil
	}
	id, ok, err := t.identify(metadata.ValueFromIncomingContext(ctx, "authorization"), method)
	if err != nil {
		return nil, err
	}
	if !ok {
		return ctx, nil
	}
	return WithIdentity(ctx, id), nil
}

// UnaryServerInterceptor rejects calls without a valid token.
func (t *Tokens) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, err := t.authenticate(ctx, info.FullMethod)
		if err != nil {
			return nil, err
		}
		if id, ok := CallerIdentity(ctx); ok {
			if err := AuthorizeFields(id, info.FullMethod, req); err != nil {
				return nil, status.Error(codes.PermissionDenied, err.Error())
			}
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

// OnBehalfOfMetadata carries, on a call one service makes to another, the
// principal of the request being served (the REST caller), so the callee
// can share its capacity fairly among the end callers instead of seeing
// one service principal for everyone.
const OnBehalfOfMetadata = "x-vcfsm-on-behalf-of"

// OnBehalfOfUnaryClientInterceptor names the caller of ctx (if any) in
// every outgoing unary call's OnBehalfOfMetadata.
func OnBehalfOfUnaryClientInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if p := Principal(ctx); p != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, OnBehalfOfMetadata, p)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// OnBehalfOf is who a call serves: the principal the caller names in
// OnBehalfOfMetadata when the caller may make internal calls (a service,
// an administrator), else the caller itself. Only the former are trusted
// to speak for someone else.
func OnBehalfOf(ctx context.Context) string {
	id, _ := CallerIdentity(ctx)
	if id.Role.Has(PermInternal) {
		if v := metadata.ValueFromIncomingContext(ctx, OnBehalfOfMetadata); len(v) > 0 && v[0] != "" {
			return v[0]
		}
	}
	return id.Principal
}

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
