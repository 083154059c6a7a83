package hook

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// AnnotationPrefix starts every pre-check hook annotation of a Carvel
// Package (seed 000, "Annotations").
const AnnotationPrefix = "appplatform.vmware.com/compatibility-check"

// The annotations, by suffix. All but _data are read from the source
// (installed) version's Package; _data from the target version's.
const (
	AnnotationService  = AnnotationPrefix + "_service"
	AnnotationURL      = AnnotationPrefix + "_url"
	AnnotationPort     = AnnotationPrefix + "_port"
	AnnotationProtocol = AnnotationPrefix + "_protocol"
	AnnotationMethod   = AnnotationPrefix + "_method"
	AnnotationCASecret = AnnotationPrefix + "_ca_secret"
	AnnotationData     = AnnotationPrefix + "_data"
)

// routingAnnotations are the annotations whose presence on the source
// Package means the service declares a hook.
var routingAnnotations = []string{
	AnnotationService, AnnotationURL, AnnotationPort, AnnotationProtocol, AnnotationMethod, AnnotationCASecret,
}

// Defaults from the seed's annotation table.
const (
	defaultPort     = 80
	defaultProtocol = "http"
	defaultMethod   = "GET"
)

// route is where and how to call one service's hook.
type route struct {
	service  string
	path     string
	port     int
	scheme   string // "http" or "https"
	method   string // "GET" or "POST"
	caSecret string
}

// packageDoc is the part of a Carvel Package the hook reads.
type packageDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
}

// packageAnnotations returns the annotations of the one Package document
// in data. data may hold several documents (a bundle's package.yml carries
// the PackageMetadata too); documents of other kinds are ignored.
func packageAnnotations(data []byte) (map[string]string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the Package YAML is empty")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var found []packageDoc
	for i := 0; ; i++ {
		var doc packageDoc
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("YAML document %d: %w", i+1, err)
		}
		if doc.Kind == "Package" {
			found = append(found, doc)
		}
	}
	switch len(found) {
	case 0:
		return nil, errors.New("no document of kind Package")
	case 1:
		return found[0].Metadata.Annotations, nil
	default:
		return nil, fmt.Errorf("%d documents of kind Package; expected one", len(found))
	}
}

// hasHook reports whether the source Package declares a hook at all.
func hasHook(annotations map[string]string) bool {
	for _, k := range routingAnnotations {
		if _, ok := annotations[k]; ok {
			return true
		}
	}
	return false
}

// dnsLabel is a Kubernetes Service or namespace name (RFC 1123 label).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// validLabel reports whether s may be a Service or namespace name.
func validLabel(s string) bool { return len(s) <= 63 && dnsLabel.MatchString(s) }

// parseRoute validates the routing annotations of the source Package and
// applies the seed's defaults. The errors start with the wording the seed's
// troubleshooting table documents where it gives one.
func parseRoute(a map[string]string) (route, error) {
	r := route{port: defaultPort, scheme: defaultProtocol, method: defaultMethod}

	r.service = strings.TrimSpace(a[AnnotationService])
	if r.service == "" {
		return r, fmt.Errorf("annotation %s is required: name the Kubernetes Service that serves the hook", AnnotationService)
	}
	if !validLabel(r.service) {
		return r, fmt.Errorf("annotation %s: %q is not a valid Kubernetes Service name (lowercase letters, digits and '-', at most 63 characters)", AnnotationService, r.service)
	}

	r.path = strings.TrimSpace(a[AnnotationURL])
	if r.path == "" {
		return r, fmt.Errorf("annotation %s is required: the path after host:port/", AnnotationURL)
	}
	if strings.HasPrefix(r.path, "/") {
		return r, fmt.Errorf("annotation %s: %q must not start with '/': it is appended after host:port/", AnnotationURL, r.path)
	}
	if _, err := url.Parse("http://h/" + r.path); err != nil {
		return r, fmt.Errorf("annotation %s: %q is not a valid URL path: %w", AnnotationURL, r.path, err)
	}

	if v, ok := a[AnnotationPort]; ok {
		p, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || p < 1 || p > 65535 {
			return r, fmt.Errorf("annotation %s: %q is not a TCP port (1-65535)", AnnotationPort, v)
		}
		r.port = p
	}

	if v, ok := a[AnnotationProtocol]; ok {
		switch p := strings.ToLower(strings.TrimSpace(v)); p {
		case "http", "https":
			r.scheme = p
		default:
			return r, fmt.Errorf("protocol %s not supported: only http or https (annotation %s)", v, AnnotationProtocol)
		}
	}

	if v, ok := a[AnnotationMethod]; ok {
		switch m := strings.ToUpper(strings.TrimSpace(v)); m {
		case "GET", "POST":
			r.method = m
		default:
			return r, fmt.Errorf("method %s not supported: only GET or POST (annotation %s)", v, AnnotationMethod)
		}
	}

	r.caSecret = strings.TrimSpace(a[AnnotationCASecret])
	if r.scheme == "https" && r.caSecret == "" {
		return r, fmt.Errorf("CA cert must be provided if using HTTPS: set annotation %s to a Secret with a ca.crt key, or drop %s to use plain http", AnnotationCASecret, AnnotationProtocol)
	}
	return r, nil
}

// host is the in-cluster name the hook is reached at.
func (r route) host(namespace string) string {
	return r.service + "." + namespace + ".svc.cluster.local"
}

// url is the full request URL.
func (r route) url(namespace string) string {
	return fmt.Sprintf("%s://%s:%d/%s", r.scheme, r.host(namespace), r.port, r.path)
}
