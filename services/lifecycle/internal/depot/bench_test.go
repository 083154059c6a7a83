package depot

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
)

// benchPluginAssets makes the fixture tarball realistic: a UI plugin of a
// few MiB (incompressible, like minified JavaScript in a zip), the example
// bundle, a SupervisorService bundle and a cosign signature.
const benchPluginAssets = 4 << 20

// BenchmarkFetch measures Fetch of the realistic fixture:
//   - tarball/cold: HTTPS download, imgpkg tar read, digest checks,
//     extraction, plugin-manifest scan, commit (the digest is removed from
//     the store before every iteration, outside the timer);
//   - tarball/cached: HTTPS download, imgpkg tar read, digest checks, then
//     the stored bundle is reused;
//   - oci/cold and oci/cached: the same from the in-process registry (a
//     cached OCI fetch only resolves the manifest).
func BenchmarkFetch(b *testing.B) {
	fx := newFixtureWithAssets(b, benchPluginAssets)
	size := bundletest.FileSize(b, fx.tarPath)
	for _, tc := range []struct {
		name, source string
		cold         bool
	}{
		{"tarball/cold", fx.tarURL, true},
		{"tarball/cached", fx.tarURL, false},
		{"oci/cold", fx.reg.OCI(fx.repoTag), true},
		{"oci/cached", fx.reg.OCI(fx.repoTag), false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newTestStore(b)
			f := s.fetcher(b, trust(fx.srv))
			_, err := f.Fetch(context.Background(), tc.source, nil)
			require.NoError(b, err)
			if tc.source == fx.tarURL {
				b.SetBytes(size)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if tc.cold {
					b.StopTimer()
					require.NoError(b, f.Remove(fx.digest))
					b.StartTimer()
				}
				got, err := f.Fetch(context.Background(), tc.source, nil)
				if err != nil || got.Digest != fx.digest {
					b.Fatalf("fetch: %v", err)
				}
			}
		})
	}
}
