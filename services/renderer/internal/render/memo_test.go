package render

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

func TestValuesMemo(t *testing.T) {
	e := newTestEngine(t)
	b, err := e.Bundle(loadBundle(t, "arcturus"))
	require.NoError(t, err)
	layers := &rendererv1.ValueLayers{Inventory: loadInventory(t, "multi-region.json")}

	first, err := e.runValues(b, layers)
	require.NoError(t, err)
	again, err := e.runValues(b, proto.Clone(layers).(*rendererv1.ValueLayers))
	require.NoError(t, err)
	require.Same(t, first, again, "equal layers share the computed stages")

	other, err := e.runValues(b, &rendererv1.ValueLayers{Inventory: layers.GetInventory(), UserOverwrite: b64("regions:\n- name: us-west-1\n  vcenterName: other\n")})
	require.NoError(t, err)
	require.NotSame(t, first, other)

	// A failing input is not remembered: it fails every time.
	bad := &rendererv1.ValueLayers{UserOverwrite: "!"}
	for i := 0; i < 2; i++ {
		_, err := e.runValues(b, bad)
		require.ErrorIs(t, err, ErrInvalidInput)
	}
	require.Equal(t, 2, e.values.Len())
}

func TestConcurrentRendersShareTheMemo(t *testing.T) {
	e := newTestEngine(t)
	bundle := loadBundle(t, "arcturus")
	layers := &rendererv1.ValueLayers{Inventory: loadInventory(t, "multi-region.json")}
	want := readTestdata(t, "golden", "arcturus-multi-region", "resources.yml")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := e.RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: bundle, Values: layers})
			if err == nil && string(resp.GetYaml()) != string(want) {
				err = ErrRenderFailed
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
