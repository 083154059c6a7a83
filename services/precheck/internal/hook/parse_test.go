package hook

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

func TestResolver(t *testing.T) {
	tests := []struct {
		name    string
		entries []string
		host    string
		port    string
		want    []string
		err     string
	}{
		{name: "IP keeps the hook's port", entries: []string{"a.ns.svc.cluster.local=127.0.0.1"}, host: "a.ns.svc.cluster.local", port: "80", want: []string{"127.0.0.1:80"}},
		{name: "IP with port replaces _port", entries: []string{"a.ns.svc.cluster.local=127.0.0.1:9443"}, host: "a.ns.svc.cluster.local", port: "443", want: []string{"127.0.0.1:9443"}},
		{name: "IPv6 with port", entries: []string{"a.ns.svc.cluster.local=[::1]:9443"}, host: "a.ns.svc.cluster.local", port: "443", want: []string{"[::1]:9443"}},
		{name: "bare IPv6", entries: []string{"a.ns.svc.cluster.local=::1"}, host: "a.ns.svc.cluster.local", port: "80", want: []string{"[::1]:80"}},
		{name: "a compose alias", entries: []string{"a.ns.svc.cluster.local=samplehook"}, host: "a.ns.svc.cluster.local", port: "8080", want: []string{"samplehook:8080"}},
		{name: "a compose alias with port", entries: []string{"a.ns.svc.cluster.local=samplehook:8443"}, host: "a.ns.svc.cluster.local", port: "443", want: []string{"samplehook:8443"}},
		{name: "host names are case-insensitive, trailing dot ignored", entries: []string{" A.NS.svc.cluster.local. = 10.0.0.7 "}, host: "a.ns.SVC.cluster.local", port: "80", want: []string{"10.0.0.7:80"}},
		{name: "the later entry wins", entries: []string{"a.ns.svc.cluster.local=10.0.0.1", "a.ns.svc.cluster.local=10.0.0.2"}, host: "a.ns.svc.cluster.local", port: "80", want: []string{"10.0.0.2:80"}},
		{name: "no =", entries: []string{"a.ns.svc.cluster.local"}, err: `resolve entry "a.ns.svc.cluster.local": want HOST=ADDR`},
		{name: "no host", entries: []string{"=127.0.0.1"}, err: "want HOST=ADDR"},
		{name: "no addr", entries: []string{"a.ns.svc.cluster.local="}, err: "want HOST=ADDR"},
		{name: "host with port", entries: []string{"a.ns.svc.cluster.local:80=127.0.0.1"}, err: "must be a bare host name"},
		{name: "port zero", entries: []string{"a=127.0.0.1:0"}, err: `port "0" is not 1-65535`},
		{name: "port not a number", entries: []string{"a=127.0.0.1:http"}, err: `port "http" is not 1-65535`},
		{name: "port without host", entries: []string{"a=:80"}, err: "has no host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewResolver(tc.entries, nil)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			got, err := r.Resolve(context.Background(), tc.host, tc.port)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestResolverFallsBackToDNS(t *testing.T) {
	r, err := NewResolver([]string{"known.ns.svc.cluster.local=127.0.0.1"}, nxdomainResolver(t))
	require.NoError(t, err)
	_, err = r.Resolve(context.Background(), "unknown.ns.svc.cluster.local", "80")
	require.ErrorContains(t, err, "DNS lookup failed")
	require.ErrorContains(t, err, "no such host")
}

func TestPackageAnnotations(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want map[string]string
		err  string
	}{
		{name: "single Package", yaml: "apiVersion: data.packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  annotations:\n    k: v\n", want: map[string]string{"k": "v"}},
		{name: "package.yml with PackageMetadata first", yaml: "---\nkind: PackageMetadata\nmetadata:\n  annotations:\n    k: meta\n---\nkind: Package\nmetadata:\n  annotations:\n    k: pkg\n", want: map[string]string{"k": "pkg"}},
		{name: "unquoted numbers read as text", yaml: "kind: Package\nmetadata:\n  annotations:\n    " + AnnotationPort + ": 443\n", want: map[string]string{AnnotationPort: "443"}},
		{name: "no annotations", yaml: "kind: Package\nmetadata:\n  name: x\n", want: nil},
		{name: "empty", yaml: "  \n", err: "the Package YAML is empty"},
		{name: "no Package", yaml: "kind: PackageMetadata\n", err: "no document of kind Package"},
		{name: "two Packages", yaml: "kind: Package\n---\nkind: Package\n", err: "2 documents of kind Package; expected one"},
		{name: "not YAML", yaml: "kind: [Package\n", err: "YAML document 1:"},
		{name: "annotations not a map", yaml: "kind: Package\nmetadata:\n  annotations: [a, b]\n", err: "YAML document 1:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := packageAnnotations([]byte(tc.yaml))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseRouteDefaultsAndNormalisation(t *testing.T) {
	r, err := parseRoute(ann("_service", "svc", "_url", "a/b?x=1", "_port", " 8443 ", "_protocol", "Https", "_method", "post", "_ca_secret", "ca"))
	require.NoError(t, err)
	require.Equal(t, route{service: "svc", path: "a/b?x=1", port: 8443, scheme: "https", method: "POST", caSecret: "ca"}, r)
	require.Equal(t, "https://svc.ns.svc.cluster.local:8443/a/b?x=1", r.url("ns"))

	r, err = parseRoute(ann("_service", "svc", "_url", "check"))
	require.NoError(t, err)
	require.Equal(t, route{service: "svc", path: "check", port: 80, scheme: "http", method: "GET"}, r)

	_, err = parseRoute(ann("_service", "Bad_Name", "_url", "check"))
	require.ErrorContains(t, err, `"Bad_Name" is not a valid Kubernetes Service name`)
}

// FuzzParseResults: no body makes the parser panic, and whatever it keeps
// has a known severity.
func FuzzParseResults(f *testing.F) {
	for _, s := range []string{
		`{"results":[]}`,
		`{"results":[{"severity":"warning","message":"m"},{"severity":"x","message":"y"}]}`,
		`{"results":null}`, `<html>`, `[]`, `null`, `{"results":[1,"a",null,{}]}`, `{"results":[]} trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := parseResults(body)
		if err != nil {
			require.Nil(t, items)
			return
		}
		for _, it := range items {
			require.Contains(t, []string{SeverityError, SeverityWarning, SeverityInfo}, it.severity)
		}
	})
}

// FuzzPrepare: no pair of Package YAMLs makes preparing a call panic, and
// every refusal blocks.
func FuzzPrepare(f *testing.F) {
	f.Add([]byte("kind: Package\nmetadata:\n  annotations:\n    "+AnnotationService+": hook\n    "+AnnotationURL+": check\n"), []byte("kind: Package\n"), "svc-x")
	f.Add([]byte("kind: Package\nmetadata:\n  annotations:\n    "+AnnotationProtocol+": https\n"), []byte(""), "")
	f.Add([]byte("---\n---\nkind: Package\n"), []byte("kind: [\n"), "ns")
	d, err := NewDispatcher(Options{Token: testToken})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, source, target []byte, ns string) {
		req := &precheckv1.DispatchHookRequest{SourcePackageYaml: source, TargetPackageYaml: target, Namespace: ns}
		c, configured, err := d.prepare(req)
		if err != nil {
			res := fail(&precheckv1.HookResult{}, err.Error())
			require.True(t, res.GetBlocked())
			require.NotEmpty(t, strings.TrimSpace(res.GetFailure()))
			return
		}
		if configured {
			require.NotNil(t, c)
			require.True(t, strings.HasPrefix(c.url, "http://") || strings.HasPrefix(c.url, "https://"))
		}
	})
}
