package render

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

const passthroughValues = "#@data/values\n#@overlay/match-child-defaults missing_ok=True\n---\nregions: []\n"

// passthroughBundle has no transpiler: the (filtered) inventory is the
// vendor layer.
func passthroughBundle() *commonv1.Bundle {
	return bundleOf("sha256:passthrough", map[string]string{"config/values.yml": passthroughValues})
}

func smallInventory() *commonv1.Inventory {
	return &commonv1.Inventory{Regions: []*commonv1.Region{
		{Name: "us-west-1", Supervisors: []*commonv1.Supervisor{{Name: "sv1", DefaultStorageClass: "gold"}}, StorageClasses: []string{"gold"}},
		{Name: "eu-central-1", Supervisors: []*commonv1.Supervisor{{Name: "sv2", DefaultStorageClass: "silver"}}},
	}}
}

const smallInventoryYAML = `regions:
- name: us-west-1
  supervisors:
  - name: sv1
    defaultStorageClass: gold
  storageClasses:
  - gold
- name: eu-central-1
  supervisors:
  - name: sv2
    defaultStorageClass: silver
`

// Each row is one rule of the value layers (see layers.go).
func TestValueLayers(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		platform, vendor, user   string
		want                     string
		wantContains, wantAbsent string
	}{
		{
			name: "without a transpiler the inventory passes through",
			want: smallInventoryYAML,
		},
		{
			name:     "plain platform overlay merges list items by name, at every level",
			platform: "regions:\n- name: us-west-1\n  supervisors:\n  - name: sv1\n    defaultStorageClass: platinum\n",
			want:     strings.Replace(smallInventoryYAML, "defaultStorageClass: gold", "defaultStorageClass: platinum", 1),
		},
		{
			name: "ytt platform overlay filters the inventory (provider scoping)",
			platform: `#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all
---
regions:
#@overlay/match by=lambda i, left, right: left["name"] != "us-west-1", expects="0+"
#@overlay/remove
-
`,
			want: "regions:\n- name: us-west-1\n  supervisors:\n  - name: sv1\n    defaultStorageClass: gold\n  storageClasses:\n  - gold\n",
		},
		{
			name: "a ytt overlay sees its input as data.values",
			platform: `#@ load("@ytt:data", "data")
#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all
---
#@overlay/match missing_ok=True
regionCount: #@ len(data.values.regions)
`,
			want: smallInventoryYAML + "regionCount: 2\n",
		},
		{
			name:   "plain vendor overlay adds values",
			vendor: "tier: gold\n",
			want:   smallInventoryYAML + "tier: gold\n",
		},
		{
			name: "ytt vendor overlay edits values",
			vendor: `#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all
---
regions:
#@overlay/match by=overlay.map_key("name")
- name: eu-central-1
  #@overlay/match missing_ok=True
  tier: bronze
`,
			want: smallInventoryYAML + "  tier: bronze\n",
		},
		{
			name: "user overwrite appends an unknown name",
			user: "regions:\n- name: ap-south-1\n",
			want: smallInventoryYAML + "- name: ap-south-1\n",
		},
		{
			name: "user overwrite replaces a list whose items have no names",
			user: "regions:\n- name: us-west-1\n  storageClasses: [platinum, silver]\n",
			want: strings.Replace(smallInventoryYAML, "  storageClasses:\n  - gold\n", "  storageClasses:\n  - platinum\n  - silver\n", 1),
		},
		{
			name: "an empty list in the user overwrite empties the list",
			user: "regions: []\n",
			want: "regions: []\n",
		},
		{
			name: "user documents apply in order",
			user: "tier: gold\n---\ntier: silver\n",
			want: smallInventoryYAML + "tier: silver\n",
		},
		{
			name:     "every layer applies, in order",
			platform: "tier: platform\n",
			vendor:   "tier: vendor\n",
			user:     "tier: user\n",
			want:     smallInventoryYAML + "tier: user\n",
		},
		{
			name: "ytt user overwrite",
			user: `#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all
---
#@overlay/remove
regions:
`,
			want: "regions: []\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layers := &rendererv1.ValueLayers{Inventory: smallInventory(), PlatformOverlay: b64(tc.platform), VendorOverlay: b64(tc.vendor), UserOverwrite: b64(tc.user)}
			got := effective(t, newTestEngine(t), passthroughBundle(), layers, false)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestLayersAcceptWrappedBase64(t *testing.T) {
	// `base64` wraps its output at 76 columns, as in api.md's shell example.
	encoded := b64("tier: " + strings.Repeat("x", 100) + "\n")
	wrapped := encoded[:76] + "\n" + encoded[76:] + "\n"
	got := effective(t, newTestEngine(t), passthroughBundle(), &rendererv1.ValueLayers{UserOverwrite: wrapped}, false)
	require.Contains(t, got, "tier: "+strings.Repeat("x", 100))
}

// api.md's "Update user configuration" example, applied over the output of
// packaging-and-build.md's transpiler for api.md's inventory: it changes
// region us-west-1's registry size and nothing else.
func TestAPIMdUserOverwriteExample(t *testing.T) {
	const overwrite = `regions:
  - name: us-west-1
    hostSupervisor:
      name: supervisor-vc1
      configuration:
        persistence:
          persistentVolumeClaim:
            registry:
              size: 20Gi
`
	e := newTestEngine(t)
	b := loadBundle(t, "api-example")
	inv := loadInventory(t, "api-example.json")

	before := effective(t, e, b, &rendererv1.ValueLayers{Inventory: inv}, false)
	require.Equal(t, `regions:
- name: us-west-1
  hostSupervisor:
    name: supervisor-vc1
    configuration:
      persistence:
        persistentVolumeClaim:
          registry:
            storageClass: vks-content-library
            size: 10Gi
  clientSupervisors:
  - supervisor-vc1
`, before)

	after := effective(t, e, b, &rendererv1.ValueLayers{Inventory: inv, UserOverwrite: b64(overwrite)}, false)
	require.Equal(t, strings.Replace(before, "size: 10Gi", "size: 20Gi", 1), after)

	// api.md's PATCH example, "cmVnaW9uczoKICAtIG5hbWU6IHVzLXdlc3QtMQo=",
	// names the region only: nothing changes.
	same := effective(t, e, b, &rendererv1.ValueLayers{Inventory: inv, UserOverwrite: "cmVnaW9uczoKICAtIG5hbWU6IHVzLXdlc3QtMQo="}, false)
	require.Equal(t, before, same)

	// expanded=true adds the schema's defaults, as api.md's response
	// example shows them.
	expanded := effective(t, e, b, &rendererv1.ValueLayers{Inventory: inv, UserOverwrite: b64(overwrite)}, true)
	require.Equal(t, after+"defaults:\n  arcturusAdminPassword: Arcturus12345\n", expanded)
}

func TestValueLayerErrors(t *testing.T) {
	arcturus := func(t *testing.T) *commonv1.Bundle { return loadBundle(t, "arcturus") }
	passthrough := func(*testing.T) *commonv1.Bundle { return passthroughBundle() }
	withTranspiler := func(transpiler string) func(*testing.T) *commonv1.Bundle {
		return func(*testing.T) *commonv1.Bundle {
			return bundleOf("sha256:transpiler", map[string]string{"config/values.yml": passthroughValues, transpilerFile: transpiler})
		}
	}
	for _, tc := range []struct {
		name   string
		bundle func(*testing.T) *commonv1.Bundle
		layers *rendererv1.ValueLayers
		// want is the whole message, or a prefix ending in "…".
		want string
	}{
		{
			name: "platform overlay is not base64", bundle: passthrough,
			layers: &rendererv1.ValueLayers{PlatformOverlay: "not base64!"},
			want:   "platformOverlay: invalid base64 (layers are base64-encoded YAML, as in api.md): illegal base64 data at input byte 9",
		},
		{
			name: "vendor overlay is not YAML", bundle: passthrough,
			layers: &rendererv1.ValueLayers{VendorOverlay: b64("a: [1, 2\n")},
			want:   "vendorOverlay: invalid YAML: …",
		},
		{
			name: "user overwrite is a list", bundle: passthrough,
			layers: &rendererv1.ValueLayers{UserOverwrite: b64("- a\n- b\n")},
			want:   "userOverwrite: expected a map of values, got array",
		},
		{
			name: "user overwrite is a string", bundle: passthrough,
			layers: &rendererv1.ValueLayers{UserOverwrite: b64("just text\n")},
			want:   "userOverwrite: expected a map of values, got string",
		},
		{
			name: "ytt platform overlay fails", bundle: passthrough,
			layers: &rendererv1.ValueLayers{PlatformOverlay: b64("--- #@ no_such_function()\n")},
			want:   "platformOverlay: …undefined: no_such_function",
		},
		{
			name: "ytt platform overlay leaves two documents", bundle: passthrough,
			layers: &rendererv1.ValueLayers{PlatformOverlay: b64("#@ x = 1\n---\nnot: an overlay\n")},
			want:   "platformOverlay: produced 2 documents; expected exactly one document of values",
		},
		{
			name: "merging by name needs unique names", bundle: passthrough,
			layers: &rendererv1.ValueLayers{
				Inventory:     &commonv1.Inventory{Regions: []*commonv1.Region{{Name: "twin"}, {Name: "twin"}}},
				UserOverwrite: b64("regions:\n- name: twin\n  tier: gold\n"),
			},
			want: "userOverwrite: merge: …Expected number of matched nodes to be 1, but was 2",
		},
		{
			name: "transpiler fails", bundle: withTranspiler("#@ load(\"@ytt:data\", \"data\")\n--- #@ data.values.nope\n"),
			layers: &rendererv1.ValueLayers{Inventory: smallInventory()},
			want:   "transpiler: …struct has no .nope field or method",
		},
		{
			name: "transpiler produces a list", bundle: withTranspiler("---\n- a\n"),
			layers: &rendererv1.ValueLayers{},
			want:   "transpiler: produced array; expected a map of values",
		},
		{
			name: "value of the wrong type", bundle: arcturus,
			layers: &rendererv1.ValueLayers{
				Inventory:     loadInventory(t, "multi-region.json"),
				UserOverwrite: b64("regions:\n- name: us-west-1\n  hostSupervisor:\n    configuration:\n      port: eighty\n"),
			},
			want: "valuesSchema: regions[0].hostSupervisor.configuration.port: expected integer, got string",
		},
		{
			name: "required value missing", bundle: arcturus,
			layers: &rendererv1.ValueLayers{
				Inventory:     loadInventory(t, "multi-region.json"),
				UserOverwrite: b64("regions:\n- name: ap-south-1\n"),
			},
			want: "valuesSchema: regions[2].hostSupervisor: required property is missing",
		},
		{
			name: "every violation is reported", bundle: arcturus,
			layers: &rendererv1.ValueLayers{
				Inventory:     loadInventory(t, "multi-region.json"),
				UserOverwrite: b64("regions:\n- name: us-west-1\n  clientSupervisors: [1]\n- name: ap-south-1\n"),
			},
			want: "valuesSchema: regions[0].clientSupervisors[0]: expected string, got integer; regions[2].hostSupervisor: required property is missing",
		},
		{
			name: "config's own ytt schema rejects a value",
			bundle: func(*testing.T) *commonv1.Bundle {
				return bundleOf("sha256:ytt-schema", map[string]string{"config/schema.yml": "#@data/values-schema\n---\nreplicas: 1\n"})
			},
			layers: &rendererv1.ValueLayers{UserOverwrite: b64("replicas: many\n")},
			want:   "config: …replicas",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newTestEngine(t).RenderEffectiveValues(context.Background(), &rendererv1.RenderEffectiveValuesRequest{Bundle: tc.bundle(t), Values: tc.layers})
			require.ErrorIs(t, err, ErrInvalidInput)
			requireMessage(t, tc.want, err.Error())
		})
	}
}

// requireMessage compares a message with want, which may hold one "…"
// standing for any text.
func requireMessage(t *testing.T, want, got string) {
	t.Helper()
	prefix, suffix, wild := strings.Cut(want, "…")
	if !wild {
		require.Equal(t, want, got)
		return
	}
	require.True(t, strings.HasPrefix(got, prefix), "message %q does not start with %q", got, prefix)
	require.Contains(t, got[len(prefix):], suffix, "message %q does not contain %q", got, suffix)
}

func TestTemplateErrorsNameTheConfigLayer(t *testing.T) {
	// The api-example schema does not require hostSupervisor; its template
	// does.
	_, err := newTestEngine(t).RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{
		Bundle: loadBundle(t, "api-example"),
		Values: &rendererv1.ValueLayers{UserOverwrite: b64("regions:\n- name: x\n")},
	})
	require.ErrorIs(t, err, ErrInvalidInput)
	requireMessage(t, "config: …vcf-service.yml:", err.Error())
	require.Contains(t, err.Error(), "struct has no .hostSupervisor field or method")
}

func TestProvenance(t *testing.T) {
	b := bundleOf("sha256:provenance", map[string]string{
		"config/values.yml": "#@data/values\n#@overlay/match-child-defaults missing_ok=True\n---\nregions: []\nreplicas: 1\n",
		packageFile: `apiVersion: packaging.carvel.dev/v1alpha1
kind: Package
spec:
  valuesSchema:
    openAPIv3:
      type: object
      properties:
        system:
          type: object
          properties:
            fqdn: {type: string, default: depot.local}
`,
	})
	layers := &rendererv1.ValueLayers{
		Inventory:       smallInventory(),
		PlatformOverlay: b64("regions:\n- name: us-west-1\n  supervisors:\n  - name: sv1\n    defaultStorageClass: platinum\n"),
		VendorOverlay:   b64("tier: gold\n"),
		// Restating sv2's storage class unchanged does not take it over.
		UserOverwrite: b64("owner: team-a\nregions:\n- name: eu-central-1\n  supervisors:\n  - name: sv2\n    defaultStorageClass: silver\n"),
	}
	e := newTestEngine(t)
	for _, expanded := range []bool{false, true} {
		resp, err := e.RenderEffectiveValues(context.Background(), &rendererv1.RenderEffectiveValuesRequest{Bundle: b, Values: layers, Provenance: true, Expanded: expanded})
		require.NoError(t, err)
		got := map[string]string{}
		var order []string
		for _, p := range resp.GetProvenance() {
			got[p.GetPath()] = p.GetLayer() + " " + p.GetValue()
			order = append(order, p.GetPath())
		}
		want := map[string]string{
			"regions[0].name":                               `inventory "us-west-1"`,
			"regions[0].supervisors[0].name":                `inventory "sv1"`,
			"regions[0].supervisors[0].defaultStorageClass": `platform "platinum"`,
			"regions[0].storageClasses[0]":                  `inventory "gold"`,
			"regions[1].name":                               `inventory "eu-central-1"`,
			"regions[1].supervisors[0].name":                `inventory "sv2"`,
			"regions[1].supervisors[0].defaultStorageClass": `inventory "silver"`,
			"tier":     `vendor "gold"`,
			"owner":    `user "team-a"`,
			"replicas": `default 1`,
		}
		if expanded {
			want["system.fqdn"] = `default "depot.local"`
		}
		require.Equal(t, want, got)
		// Document order, as the effective values print.
		require.Equal(t, "regions[0].name", order[0])
		require.Len(t, order, len(want))
	}
}

func TestProvenanceWithTranspilerIsVendor(t *testing.T) {
	resp, err := newTestEngine(t).RenderEffectiveValues(context.Background(), &rendererv1.RenderEffectiveValuesRequest{
		Bundle:     loadBundle(t, "api-example"),
		Values:     &rendererv1.ValueLayers{Inventory: loadInventory(t, "api-example.json"), UserOverwrite: b64("regions:\n- name: us-west-1\n  hostSupervisor:\n    configuration:\n      port: 8443\n")},
		Provenance: true,
		Expanded:   true,
	})
	require.NoError(t, err)
	layers := map[string]string{}
	for _, p := range resp.GetProvenance() {
		layers[p.GetPath()] = p.GetLayer()
	}
	require.Equal(t, map[string]string{
		"regions[0].name":                ProvenanceVendor,
		"regions[0].hostSupervisor.name": ProvenanceVendor,
		"regions[0].hostSupervisor.configuration.persistence.persistentVolumeClaim.registry.storageClass": ProvenanceVendor,
		"regions[0].hostSupervisor.configuration.persistence.persistentVolumeClaim.registry.size":         ProvenanceVendor,
		"regions[0].hostSupervisor.configuration.port":                                                    ProvenanceUser,
		"regions[0].clientSupervisors[0]":                                                                 ProvenanceVendor,
		"defaults.arcturusAdminPassword":                                                                  ProvenanceDefault,
	}, layers)
}

func TestInventoryMatchesProtojson(t *testing.T) {
	// The transpiler's view of the inventory is api.md's JSON: the same
	// names and the same omissions as protojson.
	inv := loadInventory(t, "multi-region.json")
	data, err := protojson.Marshal(inv)
	require.NoError(t, err)
	var want any
	require.NoError(t, json.Unmarshal(data, &want))
	gotJSON, err := json.Marshal(plainValue(protoNode(inv.ProtoReflect())))
	require.NoError(t, err)
	var got any
	require.NoError(t, json.Unmarshal(gotJSON, &got))
	require.Equal(t, want, got)

	text, err := yamlText(newDocument(protoNode(smallInventory().ProtoReflect())))
	require.NoError(t, err)
	require.Equal(t, smallInventoryYAML, string(text), "field order is the proto's (api.md's)") //nolint:testifylint // the exact text is under test: YAMLEq would ignore the field order
}

func TestTranspilerReadsInventoryAtRootAndUnderInventory(t *testing.T) {
	b := bundleOf("sha256:both", map[string]string{
		"config/values.yml": passthroughValues,
		transpilerFile:      "#@ load(\"@ytt:data\", \"data\")\n---\nroot: #@ len(data.values.regions)\nnested: #@ len(data.values.inventory.regions)\n",
	})
	got := effective(t, newTestEngine(t), b, &rendererv1.ValueLayers{Inventory: smallInventory()}, false)
	require.Equal(t, "regions: []\nroot: 2\nnested: 2\n", got)
}
