package server

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

const renderedStream = `apiVersion: v1
kind: Secret
metadata:
  name: creds
data:
  password: ` + "aHVudGVyMi1wYXNzd29yZA==" + ` # hunter2-password
stringData:
  token: tok-0123456789
  values.yml: |
    nested:
      apiKey: key-0123456789
---
apiVersion: services.vcfa.broadcom.com/v2
kind: SupervisorRegistry
metadata:
  name: reg
spec:
  username: admin
  password: tok-0123456789
`

var schema = map[string]any{
	"properties": map[string]any{
		"adminPassword": map[string]any{"type": "string", "format": "password"},
		"db": map[string]any{"properties": map[string]any{
			"dsn":  map[string]any{"type": "string", "writeOnly": true},
			"host": map[string]any{"type": "string"},
		}},
		"users": map[string]any{"type": "array", "items": map[string]any{"properties": map[string]any{
			"name": map[string]any{"type": "string"},
			"key":  map[string]any{"type": "string", "x-sensitive": true},
		}}},
	},
}

func testSecrets(t *testing.T) *secrets {
	t.Helper()
	values, err := secretStrings([]byte(renderedStream))
	require.NoError(t, err)
	return newSecrets(values, sensitivePaths(schema))
}

// What ends up in a rendered Secret (data decoded, stringData, and the
// leaves of YAML held in one) is secret; so is every key the schema marks
// (format: password, writeOnly, x-sensitive).
func TestWhatIsSecret(t *testing.T) {
	s := testSecrets(t)
	for _, v := range []string{"hunter2-password", "tok-0123456789", "key-0123456789"} {
		require.Contains(t, s.values, v)
	}
	require.NotContains(t, s.values, "admin", "a value only outside Secrets is not secret")
	require.ElementsMatch(t, [][]string{{"adminPassword"}, {"db", "dsn"}, {"users", "*", "key"}}, s.sensitive)
}

func TestValuesAreHidden(t *testing.T) {
	s := testSecrets(t)
	doc := "adminPassword: plain-but-marked\ndb:\n  dsn: postgres://x\n  host: db.example.com\nusers:\n- name: ann\n  key: k1\nhookCA: tok-0123456789\nport: 8080\n"
	out := string(s.valuesYAML([]byte(doc)))
	for _, hidden := range []string{"plain-but-marked", "postgres://x", "k1", "tok-0123456789"} {
		require.NotContains(t, out, hidden)
	}
	for _, shown := range []string{"db.example.com", "ann", "8080"} {
		require.Contains(t, out, shown)
	}
	require.Equal(t, 4, strings.Count(out, redacted), out)

	b64 := s.valuesBase64(base64.StdEncoding.EncodeToString([]byte(doc)))
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	require.Equal(t, out, string(raw), "base64 layers are hidden the same way")
	require.Equal(t, redacted, s.valuesBase64("%%% not base64"), "what cannot be read is hidden whole")
	require.Equal(t, redacted+"\n", string(s.valuesYAML([]byte("a: [unclosed"))))

	require.NotContains(t, string(hideAll.valuesYAML([]byte(doc))), "ann", "without a render everything is hidden")
}

func TestResourcesAreHidden(t *testing.T) {
	s := &secrets{} // the stream's own Secrets are found in it
	out := string(s.resources([]byte(renderedStream)))
	for _, hidden := range []string{"aHVudGVyMi1wYXNzd29yZA==", "tok-0123456789", "key-0123456789"} {
		require.NotContains(t, out, hidden)
	}
	require.Contains(t, out, "name: creds")
	require.Contains(t, out, "username: admin")
	require.Contains(t, out, "kind: SupervisorRegistry")
}

func TestTextAndProvenanceAreHidden(t *testing.T) {
	s := testSecrets(t)
	require.Equal(t, "render failed: "+redacted+" is not a certificate (b64 "+redacted+")",
		s.text("render failed: tok-0123456789 is not a certificate (b64 "+base64.StdEncoding.EncodeToString([]byte("tok-0123456789"))+")"))
	require.Equal(t, `"`+redacted+`"`, s.provenance("users[3].key", `"anything"`))
	require.Equal(t, `"`+redacted+`"`, s.provenance("hookCA", `"tok-0123456789"`))
	require.Equal(t, `"ann"`, s.provenance("users[0].name", `"ann"`))
	require.Equal(t, []string{"a", "x.y", "0", "b"}, splitPath(`a["x.y"][0].b`))

	// A whole answer: value layers, plan YAML, free text, provenance.
	view := &lifecyclev1.VcfService{Name: "visible", Values: &lifecyclev1.OverlayValues{
		UserOverwrite: base64.StdEncoding.EncodeToString([]byte("hookCA: tok-0123456789\n"))},
		Labels: map[string]string{"note": "key is key-0123456789"}}
	s.hideView(view)
	raw, err := base64.StdEncoding.DecodeString(view.GetValues().GetUserOverwrite())
	require.NoError(t, err)
	require.Equal(t, "hookCA: "+redacted+"\n", string(raw))
	require.Equal(t, "key is "+redacted, view.GetLabels()["note"])
	require.Equal(t, "visible", view.GetName())

	plan := &lifecyclev1.PreviewUpgradeResponse{Plan: &lifecyclev1.UpgradePlan{
		Resources:           []*lifecyclev1.ResourcePlanEntry{{PlannedYaml: renderedStream}},
		ConfigurationErrors: []string{"hookCA tok-0123456789 is wrong"},
	}}
	s.message(plan.ProtoReflect())
	require.NotContains(t, plan.GetPlan().GetResources()[0].GetPlannedYaml(), "key-0123456789")
	require.Equal(t, "hookCA "+redacted+" is wrong", plan.GetPlan().GetConfigurationErrors()[0])
}
