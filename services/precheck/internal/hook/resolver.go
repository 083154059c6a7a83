package hook

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Resolver turns a hook's in-cluster host name into the addresses to dial.
// Static entries (--resolve HOST=ADDR) win; every other name goes to DNS.
// It only chooses where to connect: TLS still verifies the in-cluster name.
type Resolver struct {
	static map[string]override
	dns    *net.Resolver
}

// override is one --resolve entry's ADDR.
type override struct {
	host string
	port string // empty: keep the hook's _port
}

// NewResolver parses entries of the form HOST=ADDR, where ADDR is an IP
// address or a host name, optionally with :PORT (IPv6 with a port in
// brackets). When ADDR has a port it replaces the hook's _port. Later
// entries for the same HOST win. dns nil means the system resolver.
func NewResolver(entries []string, dns *net.Resolver) (*Resolver, error) {
	if dns == nil {
		dns = net.DefaultResolver
	}
	r := &Resolver{static: make(map[string]override, len(entries)), dns: dns}
	for _, e := range entries {
		host, o, err := parseResolveEntry(e)
		if err != nil {
			return nil, err
		}
		r.static[host] = o
	}
	return r, nil
}

// parseResolveEntry reads one HOST=ADDR entry, naming it in errors so a
// typo in a flag fails the start with the entry to fix.
func parseResolveEntry(e string) (string, override, error) {
	host, addr, ok := strings.Cut(strings.TrimSpace(e), "=")
	host = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(host), "."))
	addr = strings.TrimSpace(addr)
	if !ok || host == "" || addr == "" {
		return "", override{}, fmt.Errorf("resolve entry %q: want HOST=ADDR, e.g. hook.svc-x.svc.cluster.local=127.0.0.1:8443", e)
	}
	if strings.ContainsAny(host, ":/ ") {
		return "", override{}, fmt.Errorf("resolve entry %q: HOST %q must be a bare host name, without port or scheme", e, host)
	}
	if ip := net.ParseIP(strings.Trim(addr, "[]")); ip != nil {
		return host, override{host: ip.String()}, nil
	}
	if !strings.Contains(addr, ":") {
		return host, override{host: addr}, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", override{}, fmt.Errorf("resolve entry %q: ADDR %q: %w", e, addr, err)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return "", override{}, fmt.Errorf("resolve entry %q: ADDR %q: port %q is not 1-65535", e, addr, p)
	}
	if h == "" {
		return "", override{}, fmt.Errorf("resolve entry %q: ADDR %q has no host", e, addr)
	}
	return host, override{host: h, port: p}, nil
}

// Resolve returns the addresses to try, in order, for host:port.
func (r *Resolver) Resolve(ctx context.Context, host, port string) ([]string, error) {
	if o, ok := r.static[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
		if o.port != "" {
			port = o.port
		}
		return []string{net.JoinHostPort(o.host, port)}, nil
	}
	ips, err := r.dns.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("DNS lookup failed: %w", err)
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = net.JoinHostPort(ip, port)
	}
	return out, nil
}
