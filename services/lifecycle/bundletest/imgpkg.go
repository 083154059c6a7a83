package bundletest

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	imgpkgcmd "carvel.dev/imgpkg/pkg/imgpkg/cmd"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
)

// Imgpkg runs the imgpkg CLI in-process (carvel.dev/imgpkg/pkg/imgpkg/cmd)
// with a silent UI and returns its error.
func Imgpkg(args ...string) error {
	confUI := ui.NewWrappingConfUI(ui.NewNoopUI(), ui.NewNoopLogger())
	cmd := imgpkgcmd.NewDefaultImgpkgCmd(confUI)
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}

// PushBundle pushes the bundle directory dir with `imgpkg push -b
// <reg>/<repoTag> -f <dir>` and returns the bundle digest ("sha256:<hex>").
func PushBundle(t testing.TB, reg *Registry, dir, repoTag string) string {
	t.Helper()
	ref := reg.Ref(repoTag)
	args := append([]string{"push", "-b", ref, "-f", dir}, reg.ImgpkgArgs()...)
	require.NoError(t, Imgpkg(args...), "imgpkg push -b %s", ref)
	return Digest(t, reg, ref)
}

// CopyToTar runs `imgpkg copy -b <ref> --to-tar <file> --cosign-signatures`
// and returns the tarball path (in the test's temp dir). ref is a full
// reference such as reg.Ref("myservice:1.0.0") or "<host>/<repo>@sha256:…".
func CopyToTar(t testing.TB, reg *Registry, ref string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "bundle.tar")
	args := append([]string{"copy", "-b", ref, "--to-tar", out, "--cosign-signatures"}, reg.ImgpkgArgs()...)
	require.NoError(t, Imgpkg(args...), "imgpkg copy -b %s --to-tar", ref)
	return out
}

// CopyToRepo relocates a bundle and its images with `imgpkg copy -b <ref>
// --to-repo <reg>/<repo> --cosign-signatures`, as an air-gapped install
// does, and returns the bundle reference in the new repository.
func CopyToRepo(t testing.TB, reg *Registry, ref, repo string) string {
	t.Helper()
	args := append([]string{"copy", "-b", ref, "--to-repo", reg.Ref(repo), "--cosign-signatures"}, reg.ImgpkgArgs()...)
	require.NoError(t, Imgpkg(args...), "imgpkg copy -b %s --to-repo %s", ref, repo)
	return reg.Ref(repo) + "@" + Digest(t, reg, ref)
}

// CopyImageToTar runs `imgpkg copy -i <ref> --to-tar <file>`: a tarball of
// a plain image, i.e. NOT an imgpkg bundle tarball.
func CopyImageToTar(t testing.TB, reg *Registry, ref string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	args := append([]string{"copy", "-i", ref, "--to-tar", out}, reg.ImgpkgArgs()...)
	require.NoError(t, Imgpkg(args...), "imgpkg copy -i %s --to-tar", ref)
	return out
}

// Digest resolves ref in reg and returns its manifest digest.
func Digest(t testing.TB, reg *Registry, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref, reg.nameOpts()...)
	require.NoError(t, err)
	desc, err := remote.Head(r, remote.WithTransport(reg.Transport()))
	require.NoError(t, err, "resolve %s", ref)
	return desc.Digest.String()
}

func (r *Registry) nameOpts() []name.Option {
	if r.CA == nil {
		return []name.Option{name.Insecure}
	}
	return nil
}

// TarballOf serves path on srv under name and returns its URL.
func TarballOf(srv *TarServer, name, path string) string {
	srv.Add(name, path)
	return srv.URL(name)
}

// FileSize returns the size of the file at path.
func FileSize(t testing.TB, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Size()
}
