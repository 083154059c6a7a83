package render

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// goldenCase renders one bundle with one set of layers through every
// entry point and compares each output with its golden file.
type goldenCase struct {
	name   string
	bundle string
	layers func(t *testing.T) *rendererv1.ValueLayers
}

var goldenCases = []goldenCase{
	{
		name:   "arcturus-multi-region",
		bundle: "arcturus",
		layers: func(t *testing.T) *rendererv1.ValueLayers {
			return &rendererv1.ValueLayers{Inventory: loadInventory(t, "multi-region.json")}
		},
	},
	{
		name:   "myservice-multi-region",
		bundle: "myservice-example",
		layers: func(t *testing.T) *rendererv1.ValueLayers {
			return &rendererv1.ValueLayers{Inventory: loadInventory(t, "multi-region.json")}
		},
	},
	{
		name:   "myservice-test-basic",
		bundle: "myservice-example",
		layers: func(t *testing.T) *rendererv1.ValueLayers {
			return &rendererv1.ValueLayers{UserOverwrite: b64(string(readTestdata(t, "values-myservice", "test-basic.yml")))}
		},
	},
}

func TestGolden(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			b := loadBundle(t, tc.bundle)
			layers := tc.layers(t)

			ev, err := e.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: b, Values: layers, Provenance: true})
			require.NoError(t, err)
			golden(t, tc.name+"/effective.yml", ev.GetYaml())
			golden(t, tc.name+"/provenance.txt", provenanceText(ev.GetProvenance()))

			evx, err := e.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: b, Values: layers, Expanded: true, Provenance: true})
			require.NoError(t, err)
			golden(t, tc.name+"/effective-expanded.yml", evx.GetYaml())
			golden(t, tc.name+"/provenance-expanded.txt", provenanceText(evx.GetProvenance()))

			res, err := e.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: b, Values: layers})
			require.NoError(t, err)
			golden(t, tc.name+"/resources.yml", res.GetYaml())
			golden(t, tc.name+"/resources.txt", resourcesText(res.GetResources()))
			require.Equal(t, string(evx.GetYaml()), string(res.GetEffectiveValuesYaml()), "resources are rendered with the expanded values")

			ag, err := e.RenderAccessGrants(ctx, &rendererv1.RenderAccessGrantsRequest{Bundle: b, Values: layers})
			require.NoError(t, err)
			grants, err := json.MarshalIndent(ag.GetAccessGrants().AsMap(), "", "  ")
			require.NoError(t, err)
			golden(t, tc.name+"/access-grants.json", append(grants, '\n'))
		})
	}
}

func TestArcturusAccessGrantsAreAPIMdExample(t *testing.T) {
	// The fixture is modelled on api.md's Arcturus: its grants are the
	// example of POST /render-access-grants, with the inventory's
	// management services.
	e := newTestEngine(t)
	resp, err := e.RenderAccessGrants(context.Background(), &rendererv1.RenderAccessGrantsRequest{
		Bundle: loadBundle(t, "arcturus"),
		Values: &rendererv1.ValueLayers{Inventory: loadInventory(t, "multi-region.json")},
	})
	require.NoError(t, err)
	require.Equal(t, map[string]any{
		"vCenter": map[string]any{"Role": []any{"Arcturus vCenter Administrator"}},
		"VCF Automation": map[string]any{
			"GlobalRole":         []any{"Arcturus Administrator"},
			"Role":               []any{"Arcturus Service Agent"},
			"RightBundle":        []any{"arcturusRightsBundle"},
			"RelyingParty":       []any{"https://arcturus.example.com/callback"},
			"VcfaServiceAccount": []any{"arcturus-service-account"},
			"ApiExtensionProxy":  []any{"ArcturusUIProxy"},
		},
		"Supervisor": map[string]any{"ManagementService": []any{"vcenter-api", "vcf-depot"}},
	}, resp.GetAccessGrants().AsMap())
}

func TestRendersAreDeterministic(t *testing.T) {
	b := loadBundle(t, "arcturus")
	layers := &rendererv1.ValueLayers{Inventory: loadInventory(t, "multi-region.json")}
	var first []byte
	for i := 0; i < 5; i++ {
		// A fresh engine each time: nothing may depend on cache state.
		e := newTestEngine(t)
		ag, err := e.RenderAccessGrants(context.Background(), &rendererv1.RenderAccessGrantsRequest{Bundle: b, Values: layers})
		require.NoError(t, err)
		res, err := e.RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: b, Values: layers})
		require.NoError(t, err)
		grants, err := json.Marshal(ag.GetAccessGrants().AsMap())
		require.NoError(t, err)
		out := append(grants, res.GetYaml()...)
		if first == nil {
			first = out
			continue
		}
		require.Equal(t, string(first), string(out))
	}
}

func provenanceText(ps []*rendererv1.ValueProvenance) []byte {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%-9s %s = %s\n", p.GetLayer(), p.GetPath(), p.GetValue())
	}
	return []byte(b.String())
}

func resourcesText(rs []*commonv1.Resource) []byte {
	var b strings.Builder
	for _, r := range rs {
		keys := make([]string, 0, len(r.GetLabels()))
		for k := range r.GetLabels() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		labels := make([]string, 0, len(keys))
		for _, k := range keys {
			labels = append(labels, k+"="+r.GetLabels()[k])
		}
		fmt.Fprintf(&b, "%d %s %s name=%s region=%s supervisor=%s labels=[%s]\n",
			r.GetIndex(), r.GetApiVersion(), r.GetKind(), r.GetName(), r.GetRegion(), r.GetSupervisor(), strings.Join(labels, ","))
	}
	return []byte(b.String())
}
