package steps

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

func grants(values ...string) map[string]any {
	out := map[string]any{}
	for _, v := range values {
		out["VCF Automation"] = map[string]any{"GlobalRole": []any{v}}
	}
	return out
}

// What an upgrade must accept, and whether a request's acceptance covers
// it: one row per rule.
func TestCompareTermsAndCheck(t *testing.T) {
	old := Terms{EULA: "sha256:a", Signers: []string{"broadcom"}, Grants: grants("Admin")}
	accepted := lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: grants("Admin")}
	all := &lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: grants("Admin 2")}
	cases := []struct {
		name     string
		next     Terms
		got      *lifecycle.Accepted
		required []string
		refused  string
	}{
		{"unchanged needs nothing", old, nil, nil, ""},
		{"EULA changed, not accepted", Terms{EULA: "sha256:b", Signers: old.Signers, Grants: old.Grants}, nil, []string{AcceptEULA}, "its EULA changed"},
		{"EULA changed, accepted", Terms{EULA: "sha256:b", Signers: old.Signers, Grants: old.Grants}, &lifecycle.Accepted{EULA: true}, []string{AcceptEULA}, ""},
		{"EULA added", Terms{EULA: "sha256:b", Signers: old.Signers, Grants: old.Grants}, &lifecycle.Accepted{Signatures: true}, []string{AcceptEULA}, "accepted.eula must be true"},
		{"new signer", Terms{EULA: old.EULA, Signers: []string{"broadcom-2027"}, Grants: old.Grants}, &lifecycle.Accepted{EULA: true}, []string{AcceptSignatures}, "its signature set changed"},
		{"grants changed, old ones accepted", Terms{EULA: old.EULA, Signers: old.Signers, Grants: grants("Admin 2")}, &accepted, []string{AcceptAccessGrants},
			"added: VCF Automation GlobalRole Admin 2; removed: VCF Automation GlobalRole Admin"},
		{"grants changed, new ones accepted", Terms{EULA: old.EULA, Signers: old.Signers, Grants: grants("Admin 2")}, all, []string{AcceptAccessGrants}, ""},
		{"everything changed", Terms{EULA: "", Signers: nil, Grants: grants("Admin 2")}, all, []string{AcceptEULA, AcceptSignatures, AcceptAccessGrants}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := CompareTerms(old, accepted, c.next)
			require.Equal(t, c.required, a.Required)
			err := a.Check("2.0.0", c.got)
			if c.refused == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.refused)
			require.ErrorIs(t, err, lifecycle.ErrNotAccepted, "409")
		})
	}
}

// The EULA is the bundle's root files named EULA* or LICENSE*, by content.
func TestEULAOf(t *testing.T) {
	files := func(fs ...bundle.File) *bundle.Bundle { return &bundle.Bundle{Files: fs} }
	none := EULAOf(files(bundle.File{Path: "config/eula.yml", Content: []byte("x")}, bundle.File{Path: "package.yml", Content: []byte("y")}))
	require.Empty(t, none, "only root files count")
	a := EULAOf(files(bundle.File{Path: "EULA.txt", Content: []byte("terms 1")}))
	b := EULAOf(files(bundle.File{Path: "EULA.txt", Content: []byte("terms 2")}))
	l := EULAOf(files(bundle.File{Path: "LICENSE", Content: []byte("terms 1")}))
	require.NotEmpty(t, a)
	require.NotEqual(t, a, b, "the text counts")
	require.NotEqual(t, a, l, "the file's name counts")
	require.Equal(t, a, EULAOf(files(bundle.File{Path: "EULA.txt", Content: []byte("terms 1")})))
}
