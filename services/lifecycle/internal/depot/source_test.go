package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateSource(t *testing.T) {
	tests := []struct {
		source        string
		allowInsecure bool
		ok            bool
		msg           string // part of the error message when !ok
	}{
		// https tarballs
		{"https://depot.example.com:9443/arcturus-service-9.1.0.0.tar", false, true, ""},
		{"https://depot.example.com/a/b/c.tar", false, true, ""},
		{"HTTPS://depot.example.com/c.tar", false, true, ""},
		{"https://127.0.0.1:8443/x.tar", true, true, ""},
		{"https://depot.example.com/c.tgz", false, false, "must name a .tar file"},
		{"https://depot.example.com/", false, false, "must name a .tar file"},
		{"https://depot.example.com/.tar", false, false, "must name a .tar file"},
		{"https://depot.example.com", false, false, "must name a .tar file"},
		{"https:///c.tar", false, false, "no host"},
		{"https://user:pass@depot.example.com/c.tar", false, false, "credentials"},
		{"https://depot.example.com/c.tar?token=x", false, false, "query string"},
		{"https://depot.example.com/c?x=.tar", false, false, "query string"},
		{"https://depot.example.com/c.tar#frag", false, false, "fragment"},
		{"https://depot.example.com:99999/c.tar", false, false, "port"},
		{"https://depot.example.com/c .tar", false, false, "whitespace"},
		{" https://depot.example.com/c.tar", false, false, "whitespace"},
		{"https://depot.example.com/c.tar\n", false, false, "whitespace"},
		// http only with allowInsecure
		{"http://depot.example.com/c.tar", false, false, "--allow-insecure-sources"},
		{"http://depot.example.com/c.tar", true, true, ""},
		{"http://depot.example.com/c.zip", true, false, "must name a .tar file"},
		// oci
		{"oci://registry.example.com/vcf/arcturus:9.1.0", false, true, ""},
		{"oci://registry.example.com:5000/vcf/arcturus", false, true, ""},
		{"oci://127.0.0.1:5000/arcturus@sha256:" + strings.Repeat("a", 64), false, true, ""},
		{"oci://127.0.0.1:5000/arcturus:1.0@sha256:" + strings.Repeat("a", 64), false, true, ""},
		{"oci://localhost:5000/arcturus:1.0", true, true, ""},
		{"oci://docker.io/library/arcturus:1.0", false, true, ""},
		{"oci://arcturus:1.0", false, false, "expected oci://"},
		{"oci://library/arcturus:1.0", false, false, "not explicit"},
		{"oci://registry.example.com/", false, false, "expected oci://"},
		{"oci:///arcturus:1.0", false, false, "expected oci://"},
		{"oci://registry.example.com/Arcturus:1.0", false, false, "not a valid OCI reference"},
		{"oci://registry.example.com/arcturus@sha256:abc", false, false, "not a valid OCI reference"},
		{"oci://user@registry.example.com/arcturus:1.0", false, false, "credentials"},
		// other schemes and shapes
		{"", false, false, "required"},
		{"ftp://depot.example.com/c.tar", false, false, "unsupported scheme"},
		{"file:///srv/bundles/c.tar", true, false, "unsupported scheme"},
		{"s3://bucket/c.tar", false, false, "unsupported scheme"},
		{"/srv/bundles/c.tar", false, false, "expected https://"},
		{"depot.example.com/c.tar", false, false, "expected https://"},
		{"https://depot.example.com/" + strings.Repeat("a", maxSourceLen) + ".tar", false, false, "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.source, func(t *testing.T) {
			err := ValidateSource(tc.source, tc.allowInsecure)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, bundle.ErrInvalidSource)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
}
