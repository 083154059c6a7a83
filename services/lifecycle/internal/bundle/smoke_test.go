package bundle

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
)

func TestSmoke(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	plugin := bundletest.PushPluginImage(t, reg, "plugin:1", bundletest.PluginManifest("myplugin", "1.0.0"), true)
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{Images: []bundletest.BundleImage{{Image: plugin, SystemKey: "uiplugin1"}}})
	d := bundletest.PushBundle(t, reg, dir, "myservice:1.0.0")
	bundletest.Sign(t, reg, "myservice", d)
	tarPath := bundletest.CopyToTar(t, reg, reg.Ref("myservice:1.0.0"))
	srv := bundletest.NewTarServer(t)
	u := bundletest.TarballOf(srv, "myservice-1.0.0.tar", tarPath)
	f, err := NewFetcher(Config{Dir: filepath.Join(t.TempDir(), "store"), RootCAs: srv.RootCAs()})
	require.NoError(t, err)
	b, err := f.Fetch(context.Background(), u, func(s string, p int) { fmt.Println(s, p) })
	require.NoError(t, err)
	fmt.Printf("%s %+v\n%v\n%v\n%d sigs %v\n", b.Digest, b.Package.Name, b.BundledImageDigests, b.Images, len(b.Signatures), b.PluginManifests)
	for _, f := range b.Files { fmt.Println(f.Path) }
	require.Equal(t, d, b.Digest)
	b2, err := f.Fetch(context.Background(), reg.OCI("myservice:1.0.0"), nil)
	require.NoError(t, err)
	fmt.Println(b2.Digest, b2.Source)
	f2, err := NewFetcher(Config{Dir: filepath.Join(t.TempDir(), "store2"), AllowInsecure: true})
	require.NoError(t, err)
	b3, err := f2.Fetch(context.Background(), reg.OCI("myservice:1.0.0"), func(s string, p int) { fmt.Println(s, p) })
	require.NoError(t, err)
	fmt.Printf("%s %v %v %d %v\n", b3.RegistryRepository, b3.BundledImageDigests, b3.Images, len(b3.Signatures), b3.PluginManifests)
}
