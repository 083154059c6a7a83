package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A bundle archived by one store and restored into another is the bundle
// Load returns on the first (facts, tree, parsed documents), and the
// restored store holds it like a fetched one.
func TestArchiveRestoreRoundTrip(t *testing.T) {
	fx := newFixture(t)
	a := newTestStore(t)
	fa := a.fetcher(t, trust(fx.srv))
	_, err := fa.Fetch(context.Background(), fx.tarURL, nil)
	require.NoError(t, err)
	want, err := fa.Load(fx.digest)
	require.NoError(t, err)

	var archive bytes.Buffer
	require.NoError(t, fa.Archive(fx.digest, &archive))
	var again bytes.Buffer
	require.NoError(t, fa.Archive(fx.digest, &again))
	require.Equal(t, archive.Bytes(), again.Bytes(), "an archive is deterministic")

	b := newTestStore(t)
	fb := b.fetcher(t)
	got, err := fb.Restore(context.Background(), fx.digest, bytes.NewReader(archive.Bytes()))
	require.NoError(t, err)
	requireSameBundle(t, want, got)
	b.requireOnly(t, fx.digest)
	loaded, err := fb.Load(fx.digest)
	require.NoError(t, err)
	requireSameBundle(t, want, loaded)

	again.Reset()
	require.NoError(t, fb.Archive(fx.digest, &again))
	require.Equal(t, archive.Bytes(), again.Bytes(), "a restored bundle archives to the same bytes")

	require.ErrorIs(t, fb.Archive("sha256:"+strings.Repeat("0", 64), io.Discard), bundle.ErrNotFound)
}

func requireSameBundle(t *testing.T, want, got *bundle.Bundle) {
	t.Helper()
	w, g := *want, *got
	w.Dir, g.Dir, w.Source, g.Source = "", "", "", ""
	require.Equal(t, w, g)
}

// An archive that is not the digest's bundle, or whose reader fails at its
// end (a checksum), is refused and leaves nothing behind.
func TestRestoreRefusesAnotherBundle(t *testing.T) {
	fx := newFixture(t)
	a := newTestStore(t)
	fa := a.fetcher(t, trust(fx.srv))
	_, err := fa.Fetch(context.Background(), fx.tarURL, nil)
	require.NoError(t, err)
	var archive bytes.Buffer
	require.NoError(t, fa.Archive(fx.digest, &archive))

	b := newTestStore(t)
	fb := b.fetcher(t)
	other := "sha256:" + strings.Repeat("1", 64)
	_, err = fb.Restore(context.Background(), other, bytes.NewReader(archive.Bytes()))
	require.ErrorIs(t, err, bundle.ErrHostile)
	require.ErrorContains(t, err, "not this bundle")

	errSum := errors.New("checksum mismatch at the end")
	_, err = fb.Restore(context.Background(), fx.digest, io.MultiReader(bytes.NewReader(archive.Bytes()), failingReader{errSum}))
	require.ErrorIs(t, err, errSum)

	var linked bytes.Buffer
	tw := tar.NewWriter(&linked)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "tree/x", Linkname: "/etc/passwd"}))
	require.NoError(t, tw.Close())
	_, err = fb.Restore(context.Background(), fx.digest, &linked)
	require.ErrorIs(t, err, bundle.ErrHostile)
	b.requireOnly(t)
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }
