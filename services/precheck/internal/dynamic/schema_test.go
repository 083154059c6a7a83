package dynamic

import (
	"testing"

	"github.com/stretchr/testify/require"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// TestSchemaValidation: one row per required field of every element type
// (element-types/*.md "Spec Fields"), plus the type, label, apiVersion and
// kind rules, and the Secret rules.
func TestSchemaValidation(t *testing.T) {
	type row struct {
		name   string
		kind   string
		change func(m map[string]any)
		status string
		msg    string // exact, or contained when contains is set
		exact  bool
	}
	var tests []row
	// Every required spec field, removed, fails with its name and type.
	for kind, fields := range elementSpecs {
		for _, f := range fields {
			if !f.required {
				continue
			}
			tests = append(tests, row{
				name: kind + " without spec." + f.name, kind: kind,
				change: func(m map[string]any) { delete(spec(m), f.name) },
				status: StatusFailed, msg: "spec." + f.name + " is required (" + f.typ.String() + ")",
			})
		}
	}
	tests = append(tests,
		row{name: "required string empty", kind: "GlobalRole", change: func(m map[string]any) { spec(m)["name"] = "  " },
			status: StatusFailed, msg: "spec.name must not be empty", exact: true},
		row{name: "required list empty", kind: "RelyingParty", change: func(m map[string]any) { spec(m)["redirectUris"] = []any{} },
			status: StatusFailed, msg: "spec.redirectUris must not be empty", exact: true},
		row{name: "string where a boolean belongs", kind: "RelyingParty", change: func(m map[string]any) { spec(m)["isPublic"] = "false" },
			status: StatusFailed, msg: "spec.isPublic must be a boolean", exact: true},
		row{name: "object where a string belongs", kind: "SupervisorRegistry", change: func(m map[string]any) { spec(m)["endpoint"] = map[string]any{"host": "x"} },
			status: StatusFailed, msg: "spec.endpoint must be a string", exact: true},
		row{name: "list of non-strings where strings belong", kind: "GlobalRole", change: func(m map[string]any) { spec(m)["rights"] = []any{"A", 3} },
			status: StatusFailed, msg: "spec.rights must be a list of strings", exact: true},
		row{name: "optional field of the wrong type", kind: "UserInterfacePlugin", change: func(m map[string]any) { spec(m)["enabled"] = "yes" },
			status: StatusFailed, msg: "spec.enabled must be a boolean", exact: true},
		row{name: "string where an object belongs", kind: "SupervisorService", change: func(m map[string]any) { spec(m)["package"] = "arcturus" },
			status: StatusFailed, msg: "spec.package must be an object"},
		row{name: "no spec", kind: "RdeBundle", change: func(m map[string]any) { delete(m, "spec") },
			status: StatusFailed, msg: "spec is required and must be an object", exact: true},
		row{name: "no name label", kind: "Role", change: func(m map[string]any) { delete(m, "metadata") },
			status: StatusFailed, msg: "metadata.labels[services.vcfa.broadcom.com/name] is required: it identifies the resource", exact: true},
		row{name: "another apiVersion", kind: "Role", change: func(m map[string]any) { m["apiVersion"] = "services.vcfa.broadcom.com/v1" },
			status: StatusFailed, msg: `apiVersion is "services.vcfa.broadcom.com/v1"; Role is served as services.vcfa.broadcom.com/v2`, exact: true},
		row{name: "unknown kind", kind: "Role", change: func(m map[string]any) { m["kind"] = "Deployment" },
			status: StatusFailed, msg: `kind "Deployment" is not an element type of services.vcfa.broadcom.com/v2 (known: ApiExtension, ApiExtensionProxy, GlobalRole, Overlay, RdeBundle, RelyingParty, RightBundle, Role, SupervisorRegistry, SupervisorService, UserInterfacePlugin, VcServiceAccount, VcfaServiceAccount); only those and Secret may be rendered`, exact: true},
		row{name: "unknown spec field warns", kind: "RdeBundle", change: func(m map[string]any) { spec(m)["imag"] = "typo" },
			status: StatusWarning, msg: "spec.imag is not a field of RdeBundle and is ignored", exact: true},
		row{name: "problems and notes together", kind: "RdeBundle", change: func(m map[string]any) { spec(m)["imag"] = spec(m)["image"]; delete(spec(m), "image") },
			status: StatusFailed, msg: "spec.image is required (a string); spec.imag is not a field of RdeBundle and is ignored", exact: true},
		row{name: "valid element", kind: "ApiExtension", change: func(map[string]any) {},
			status: StatusPassed, msg: "ApiExtension spec has its required fields (name, vendor, version, tokenConfig, urlMatchers) with the documented types", exact: true},

		row{name: "Secret valid", kind: "Secret", change: func(map[string]any) {},
			status: StatusPassed, msg: "v1 Secret with 2 well-formed keys", exact: true},
		row{name: "Secret data not base64", kind: "Secret", change: func(m map[string]any) { m["data"] = map[string]any{"ca.crt": "-----BEGIN"} },
			status: StatusFailed, msg: "data.ca.crt is not base64"},
		row{name: "Secret value not a string", kind: "Secret", change: func(m map[string]any) { m["stringData"] = map[string]any{"port": 443} },
			status: StatusFailed, msg: "stringData.port must be a string", exact: true},
		row{name: "Secret key with a slash", kind: "Secret", change: func(m map[string]any) { m["stringData"] = map[string]any{"a/b": "x"} },
			status: StatusFailed, msg: `stringData key "a/b" may only hold letters, digits, '-', '_' and '.'`, exact: true},
		row{name: "Secret data not a map", kind: "Secret", change: func(m map[string]any) { m["data"] = []any{"a"} },
			status: StatusFailed, msg: "data must be a map of keys to strings", exact: true},
		row{name: "Secret without a name", kind: "Secret", change: func(m map[string]any) { delete(m["metadata"].(map[string]any), "generateName") },
			status: StatusFailed, msg: "metadata.name or metadata.generateName is required", exact: true},
		row{name: "Secret of another apiVersion", kind: "Secret", change: func(m map[string]any) { m["apiVersion"] = "v2" },
			status: StatusFailed, msg: `apiVersion is "v2"; Secret is served as v1`, exact: true},
		row{name: "Secret type not a string", kind: "Secret", change: func(m map[string]any) { m["type"] = 1 },
			status: StatusFailed, msg: "type must be a string", exact: true},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := edit(t, fixture(t, tc.kind), tc.change)
			report := runChecks(t, request(t, doc{yaml: y, staged: &precheckv1.StagedResource{Target: targetOf(tc.kind), Reachable: true}}))
			c := check(report, 0, CheckSchemaValidation)
			require.NotNil(t, c)
			require.Equal(t, tc.status, c.GetStatus(), c.GetMessage())
			if tc.exact {
				require.Equal(t, tc.msg, c.GetMessage())
			} else {
				require.Contains(t, c.GetMessage(), tc.msg)
			}
		})
	}
}

// TestAPICompatibility: the resource's apiVersion/kind against what its
// target serves.
func TestAPICompatibility(t *testing.T) {
	tests := []struct {
		name     string
		kind     string
		platform func(p *precheckv1.PlatformFacts)
		staged   *precheckv1.StagedResource
		change   func(m map[string]any)
		status   string
		msg      string
	}{
		{name: "Supervisor serves the exact kind", kind: "SupervisorService",
			status: StatusPassed, msg: "Supervisor supervisor-vc1 serves services.vcfa.broadcom.com/v2/SupervisorService"},
		{name: "Supervisor does not serve the kind", kind: "SupervisorRegistry",
			platform: func(p *precheckv1.PlatformFacts) {
				p.Supervisors[0].SupportedApiVersions = []string{"services.vcfa.broadcom.com/v2/SupervisorService"}
			},
			status: StatusFailed, msg: "Supervisor supervisor-vc1 does not serve services.vcfa.broadcom.com/v2/SupervisorRegistry (it serves services.vcfa.broadcom.com/v2/SupervisorService)"},
		{name: "Supervisor not in the inventory", kind: "SupervisorRegistry",
			change: func(m map[string]any) { spec(m)["supervisor"] = "supervisor-gone" },
			staged: &precheckv1.StagedResource{Target: "supervisor-gone", Reachable: true},
			status: StatusFailed, msg: "Supervisor supervisor-gone is not in the platform inventory"},
		{name: "VCF Automation serves the whole API version", kind: "RelyingParty",
			status: StatusPassed, msg: "target vcfa serves services.vcfa.broadcom.com/v2/RelyingParty"},
		{name: "vCenter serves only its kind", kind: "GlobalRole", staged: &precheckv1.StagedResource{Target: testVCenter, Reachable: true},
			status: StatusFailed, msg: "target vcenter-1 does not serve services.vcfa.broadcom.com/v2/GlobalRole (it serves services.vcfa.broadcom.com/v2/VcServiceAccount)"},
		{name: "an older VCF Automation", kind: "RdeBundle",
			platform: func(p *precheckv1.PlatformFacts) {
				p.Targets[0].SupportedApiVersions = []string{"services.vcfa.broadcom.com/v1"}
			},
			status: StatusFailed, msg: "target vcfa does not serve services.vcfa.broadcom.com/v2/RdeBundle (it serves services.vcfa.broadcom.com/v1)"},
		{name: "target reports nothing", kind: "RdeBundle",
			platform: func(p *precheckv1.PlatformFacts) { p.Targets[0].SupportedApiVersions = nil },
			status:   StatusFailed, msg: "target vcfa reported no supported API versions"},
		{name: "target unknown to the platform", kind: "Role", staged: &precheckv1.StagedResource{Target: "vcfa-eu", Reachable: true},
			status: StatusFailed, msg: "target vcfa-eu is not among the platform's targets"},
		{name: "staging names no target", kind: "Role", staged: &precheckv1.StagedResource{Reachable: true},
			status: StatusFailed, msg: "the staging result names no target to check the API against"},
		{name: "Overlay is served by the Service Manager", kind: "Overlay",
			status: StatusPassed, msg: "services.vcfa.broadcom.com/v2/Overlay is served by the Service Manager itself"},
		{name: "Overlay of another API version", kind: "Overlay", change: func(m map[string]any) { m["apiVersion"] = "services.vcfa.broadcom.com/v3" },
			status: StatusFailed, msg: "services.vcfa.broadcom.com/v3/Overlay is not served: the Service Manager serves Overlay as services.vcfa.broadcom.com/v2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := fixture(t, tc.kind)
			if tc.change != nil {
				y = edit(t, y, tc.change)
			}
			req := request(t, doc{yaml: y, staged: tc.staged})
			if tc.platform != nil {
				tc.platform(req.Platform)
			}
			c := check(runChecks(t, req), 0, CheckAPICompatibility)
			require.NotNil(t, c)
			require.Equal(t, tc.status, c.GetStatus(), c.GetMessage())
			require.Equal(t, tc.msg, c.GetMessage())
		})
	}
}
