package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// maxSourceLen bounds what we are willing to parse and store as a source.
const maxSourceLen = 2048

// sourceKind says how a validated source is fetched.
type sourceKind int

const (
	sourceTarball sourceKind = iota + 1 // https:// (or http://) URL of an imgpkg tarball
	sourceOCI                           // oci://host[:port]/repo[:tag|@sha256:…]
)

// parsedSource is a source that passed ValidateSource.
type parsedSource struct {
	kind sourceKind
	url  *url.URL       // tarball sources
	ref  name.Reference // oci sources
}

// ValidateSource checks a bundle source the way the REST boundary needs it:
// pure, no I/O. It accepts https://…/*.tar, http://…/*.tar only when
// allowInsecure is set, and oci://host[:port]/repo[:tag|@sha256:…]. Every
// other scheme or shape is an ErrInvalidSource error saying what was wrong.
func ValidateSource(source string, allowInsecure bool) error {
	_, err := parseSource(source, allowInsecure)
	return err
}

// ValidateSource checks a source with the fetcher's own rule (whether
// http:// is allowed is configured once, in Config.AllowInsecure).
func (f *Fetcher) ValidateSource(source string) error {
	_, err := parseSource(source, f.cfg.AllowInsecure)
	return err
}

func parseSource(source string, allowInsecure bool) (parsedSource, error) {
	invalid := func(format string, args ...any) (parsedSource, error) {
		return parsedSource{}, fmt.Errorf("%w: source %q: %s", bundle.ErrInvalidSource, truncate(source, 256), fmt.Sprintf(format, args...))
	}
	if source == "" {
		return invalid("source is required")
	}
	if len(source) > maxSourceLen {
		return invalid("longer than %d characters", maxSourceLen)
	}
	if strings.TrimSpace(source) != source || strings.ContainsAny(source, "\x00\r\n\t ") {
		return invalid("must not contain whitespace or control characters")
	}
	scheme, rest, ok := strings.Cut(source, "://")
	if !ok {
		return invalid("expected https://…/<file>.tar or oci://<registry>/<repository>[:tag|@sha256:…]")
	}
	switch strings.ToLower(scheme) {
	case "https":
		return parseTarballURL(source, invalid)
	case "http":
		if !allowInsecure {
			return invalid("plain http sources are refused; use https (or start the service with --allow-insecure-sources)")
		}
		return parseTarballURL(source, invalid)
	case "oci":
		return parseOCIRef(rest, allowInsecure, invalid)
	default:
		return invalid("unsupported scheme %q: expected https or oci", scheme)
	}
}

func parseTarballURL(source string, invalid func(string, ...any) (parsedSource, error)) (parsedSource, error) {
	u, err := url.Parse(source)
	if err != nil {
		return invalid("not a valid URL: %v", err)
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return invalid("URL has no host")
	case u.User != nil:
		// The source is stored and shown by the API; credentials in it would leak.
		return invalid("URL must not carry credentials")
	case u.RawQuery != "" || u.ForceQuery:
		return invalid("URL must not have a query string (the path must end in .tar)")
	case u.Fragment != "" || strings.Contains(source, "#"):
		return invalid("URL must not have a fragment")
	case !strings.HasSuffix(u.Path, ".tar") || strings.HasSuffix(u.Path, "/.tar"):
		return invalid("URL path must name a .tar file (the output of imgpkg copy --to-tar)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return invalid("invalid port %q", p)
		}
	}
	u.Scheme = strings.ToLower(u.Scheme)
	return parsedSource{kind: sourceTarball, url: u}, nil
}

func parseOCIRef(rest string, allowInsecure bool, invalid func(string, ...any) (parsedSource, error)) (parsedSource, error) {
	host, repo, ok := strings.Cut(rest, "/")
	if !ok || host == "" || repo == "" {
		return invalid("expected oci://<registry>/<repository>[:tag|@sha256:…]")
	}
	if strings.Contains(host, "@") {
		return invalid("registry must not carry credentials")
	}
	// go-containerregistry would read a first segment without '.' or ':'
	// as part of a Docker Hub repository; a bundle source must say
	// explicitly where it comes from.
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return invalid("registry %q is not explicit (want oci://<registry>/<repository>…, e.g. oci://registry.example.com/%s)", host, repo)
	}
	opts := []name.Option{name.StrictValidation}
	if allowInsecure {
		opts = append(opts, name.Insecure)
	}
	lastSegment := repo[strings.LastIndex(repo, "/")+1:]
	if !strings.ContainsAny(lastSegment, ":@") {
		rest += ":latest" // like every OCI client; StrictValidation wants it spelled out
	}
	ref, err := name.ParseReference(rest, opts...)
	if err != nil {
		return invalid("not a valid OCI reference: %v", err)
	}
	reg := ref.Context().RegistryStr()
	dockerHub := host == "docker.io" && reg == name.DefaultRegistry
	if reg != host && !dockerHub {
		return invalid("registry %q is not explicit (want oci://<registry>/<repository>…)", host)
	}
	return parsedSource{kind: sourceOCI, ref: ref}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
