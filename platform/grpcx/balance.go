package grpcx

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	// The client-side health check (healthCheckConfig) is registered by
	// this package's init; NewServer imports it too, but a client-only
	// binary must not depend on that.
	_ "google.golang.org/grpc/health"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// listScheme is the resolver scheme of a comma-separated address list.
const listScheme = "vcfsm-list"

// Keepalive of balanced connections: a ping after 20 s without traffic,
// the instance given up 10 s after an unanswered one. Within the
// servers' enforcement (Limits.KeepaliveMinTime, 10 s by default).
const (
	balancedKeepaliveTime    = 20 * time.Second
	balancedKeepaliveTimeout = 10 * time.Second
)

// DialService connects to every instance of a stateless service and
// spreads calls over them round-robin, using only the instances whose
// gRPC health service reports service (its full name, e.g.
// "vcfservices.renderer.v1.RendererService") SERVING; an instance that
// stops, dies or reports NOT_SERVING gets no more calls until it is back.
//
// addr is one of:
//   - "host:port" or "dns:///name:port": every address the name resolves
//     to (grpc's DNS resolver, re-resolved when a connection drops);
//   - "a:1,b:2,…": a fixed list, one instance per address.
//
// Options as for Dial (credentials, telemetry).
func DialService(addr, service, token string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	target, extra, err := balancedTarget(addr)
	if err != nil {
		return nil, err
	}
	cfg, err := balancedServiceConfig(service)
	if err != nil {
		return nil, err
	}
	extra = append(extra,
		grpc.WithDefaultServiceConfig(cfg),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: balancedKeepaliveTime, Timeout: balancedKeepaliveTimeout, PermitWithoutStream: true,
		}),
	)
	conn, err := Dial(target, token, append(extra, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", service, err)
	}
	return conn, nil
}

// balancedTarget turns addr into a grpc target; a comma-separated list
// gets its own manual resolver.
func balancedTarget(addr string) (string, []grpc.DialOption, error) {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return "", nil, fmt.Errorf("dial: no address given")
	}
	if !strings.Contains(addr, ",") {
		return addr, nil, nil
	}
	var state resolver.State
	for _, a := range strings.Split(addr, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if strings.Contains(a, "://") {
			return "", nil, fmt.Errorf("dial %s: a comma-separated list takes host:port entries, not %q (use dns:///name:port alone for every address of a name)", addr, a)
		}
		state.Endpoints = append(state.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: a}}})
	}
	if len(state.Endpoints) == 0 {
		return "", nil, fmt.Errorf("dial %q: no address in the list", addr)
	}
	r := manual.NewBuilderWithScheme(listScheme)
	r.InitialState(state)
	return listScheme + ":///" + addr, []grpc.DialOption{grpc.WithResolvers(r)}, nil
}

// balancedServiceConfig is round_robin over the instances whose health
// reports service SERVING.
func balancedServiceConfig(service string) (string, error) {
	cfg := map[string]any{
		"loadBalancingConfig": []any{map[string]any{"round_robin": map[string]any{}}},
		"healthCheckConfig":   map[string]any{"serviceName": service},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("service config: %w", err)
	}
	return string(raw), nil
}
