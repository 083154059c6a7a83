package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"carvel.dev/imgpkg/pkg/imgpkg/imagedesc"
	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
)

var hostileLimits = Limits{MaxDownloadBytes: 8 << 20, MaxBundleBytes: 16 << 10, MaxFiles: 20, MaxFileBytes: 4 << 10}

// TestHostileBundles fetches every hostile bundle of the catalogue from a
// registry and as an imgpkg tarball over HTTPS: each must fail with the
// right error, write nothing outside the store's temp dir, and leave
// nothing behind there either.
func TestHostileBundles(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	srv := bundletest.NewTarServer(t)
	for _, via := range []string{"oci", "tarball"} {
		t.Run(via, func(t *testing.T) {
			// One store root per transport; every case must leave it as it found it.
			s := newTestStore(t)
			f := s.fetcher(t, trust(srv), func(c *Config) { c.Limits = hostileLimits })
			cases := bundletest.HostileCases(s.escape, bundletest.HostileLimits{
				MaxFiles: hostileLimits.MaxFiles, MaxFileBytes: hostileLimits.MaxFileBytes, MaxBundleBytes: hostileLimits.MaxBundleBytes,
			})
			require.GreaterOrEqual(t, len(cases), 20)
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) {
					repoTag := via + "-" + bundletest.RepoName(c.Name) + ":1"
					var source string
					switch via {
					case "oci":
						bundletest.PushHostile(t, reg, repoTag, c)
						source = reg.OCI(repoTag)
					case "tarball":
						if c.NoTarball {
							// Such a bundle cannot reach us as a tarball: imgpkg
							// refuses to make one (the oci run covers it).
							ref := bundletest.PushHostile(t, reg, repoTag, c)
							args := append([]string{"copy", "-b", ref, "--to-tar", filepath.Join(t.TempDir(), "x.tar")}, reg.ImgpkgArgs()...)
							require.Error(t, bundletest.Imgpkg(args...))
							return
						}
						source = bundletest.TarballOf(srv, bundletest.RepoName(c.Name)+".tar", bundletest.HostileTarball(t, reg, repoTag, c))
					}
					b, err := f.Fetch(context.Background(), source, nil)
					require.Nil(t, b)
					if c.InvalidPackage {
						require.ErrorIs(t, err, bundle.ErrInvalidPackage)
						require.NotErrorIs(t, err, bundle.ErrHostile)
						require.ErrorContains(t, err, "package.yml")
					} else {
						require.ErrorIs(t, err, bundle.ErrHostile)
						require.NotErrorIs(t, err, bundle.ErrInvalidPackage)
					}
					require.ErrorContains(t, err, source, "the error names the source")
					for _, p := range c.EscapeFiles {
						_, statErr := os.Stat(p)
						require.ErrorIs(t, statErr, os.ErrNotExist, "%s must not exist", p)
					}
					s.requireOnly(t)
				})
			}
		})
	}
}

// TestHostileErrorMessagesSayWhat checks a few messages end to end: what an
// administrator reads in errorDetails must say what was wrong and where.
func TestHostileErrorMessagesSayWhat(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	s := newTestStore(t)
	f := s.fetcher(t, func(c *Config) { c.Limits = hostileLimits })
	cases := bundletest.HostileCases(s.escape, bundletest.HostileLimits{MaxFiles: hostileLimits.MaxFiles, MaxFileBytes: hostileLimits.MaxFileBytes, MaxBundleBytes: hostileLimits.MaxBundleBytes})
	want := map[string]string{
		"path traversal":                         `entry "../../escaped-traversal.txt": path traversal`,
		"absolute path":                          "absolute path",
		"symlink out of the bundle":              `entry "config/escape" is a link`,
		"hardlink":                               `entry "config/hard.yml" is a link (to "package.yml")`,
		"character device":                       `entry "config/null" is a device or FIFO`,
		"fifo":                                   `entry "config/fifo" is a device or FIFO`,
		"too many files":                         "more than 20 files (limit MaxFiles)",
		"file too big":                           `file "config/big.yml" is 4097 bytes, more than the 4096 allowed (limit MaxFileBytes)`,
		"bundle too big in total":                "(limit MaxBundleBytes)",
		"duplicate path":                         `duplicate entry "package.yml"`,
		"file and directory at the same path":    `entry "config/x/y.yml" lies under "config/x", which is a file`,
		"truncated layer":                        `is not a valid tar archive: read "config/tail.yml": unexpected EOF`,
		"not an imgpkg bundle":                   "not an imgpkg bundle",
		"missing images.yml":                     "not an imgpkg bundle: .imgpkg/images.yml is missing",
		"invalid images.yml":                     "Expected ref to be in digest form, got 'not-a-digest-ref:latest'",
		"missing package.yml":                    "the bundle has no package.yml at its root",
		"package.yml without a Package document": "no Package document",
	}
	for _, c := range cases {
		msg, ok := want[c.Name]
		if !ok {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			repoTag := "msg-" + bundletest.RepoName(c.Name) + ":1"
			bundletest.PushHostile(t, reg, repoTag, c)
			_, err := f.Fetch(context.Background(), reg.OCI(repoTag), nil)
			require.ErrorContains(t, err, msg)
		})
		delete(want, c.Name)
	}
	require.Empty(t, want, "every expected message belongs to a catalogue case")
}

// stallingHandler sends the first half of a file (with the full
// Content-Length) and then waits until the client goes away.
func stallingHandler(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
}

func TestCancelMidDownload(t *testing.T) {
	fx := newFixture(t)
	fx.srv.Handle("stall.tar", stallingHandler(fx.tarPath))
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	halfway := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := f.Fetch(ctx, fx.srv.URL("stall.tar"), func(step string, percent int) {
			if step == bundle.StepDownloading && percent >= 40 {
				select {
				case halfway <- struct{}{}:
				default:
				}
			}
		})
		done <- err
	}()
	select {
	case <-halfway:
	case <-time.After(30 * time.Second):
		t.Fatal("the download never got halfway")
	}
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, bundle.ErrFetch, "a cancelled fetch is not a failed download")
	case <-time.After(30 * time.Second):
		t.Fatal("Fetch did not return after cancellation")
	}
	s.requireOnly(t)
}

func TestFetchTimesOut(t *testing.T) {
	fx := newFixture(t)
	fx.srv.Handle("stall.tar", stallingHandler(fx.tarPath))
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv), func(c *Config) { c.HTTPTimeout = 300 * time.Millisecond })
	_, err := f.Fetch(context.Background(), fx.srv.URL("stall.tar"), nil)
	require.ErrorIs(t, err, bundle.ErrFetch)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "timed out")
	s.requireOnly(t)
}

// rewriteTar copies an imgpkg tarball, letting edit change entries.
func rewriteTar(t *testing.T, path string, edit func(name string, body []byte) []byte) string {
	t.Helper()
	in, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = in.Close() }()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(in)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		body = edit(hdr.Name, body)
		hdr.Size = int64(len(body))
		require.NoError(t, tw.WriteHeader(hdr))
		_, err = tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	p := filepath.Join(t.TempDir(), "edited.tar")
	require.NoError(t, os.WriteFile(p, out.Bytes(), 0o600))
	return p
}

// writeOuterTar writes a tarball with the given entries (name → body).
func writeOuterTar(t *testing.T, entries ...[2]string) string {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, e := range entries {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: e[0], Size: int64(len(e[1])), Mode: 0o644, Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	p := filepath.Join(t.TempDir(), "outer.tar")
	require.NoError(t, os.WriteFile(p, out.Bytes(), 0o600))
	return p
}

// TestBrokenTarballs covers tarballs that are not what imgpkg writes, have
// been tampered with, or make imgpkg's reader panic.
func TestBrokenTarballs(t *testing.T) {
	fx := newFixture(t)
	var bundleLayer string // the blob name of the bundle's layer inside the tarball
	editBundle(t, fx.tarPath, fx.digest, func(d *imagedesc.ImageDescriptor) {
		bundleLayer = strings.Replace(d.Layers[0].Digest, ":", "-", 1) + ".tar.gz"
	})
	require.NotEmpty(t, bundleLayer)

	tests := []struct {
		name string
		path string
		msg  string
	}{
		{"not a tar", writeFile(t, "garbage.tar", "this is not a tarball"), "not an imgpkg tarball"},
		{"plain tar without manifest.json", writeOuterTar(t, [2]string{"config/values.yml", "a: 1"}), "want exactly one manifest.json, found 0"},
		{"manifest.json is not JSON", writeOuterTar(t, [2]string{"manifest.json", "{"}), "not an imgpkg tarball"},
		{"manifest.json without images", writeOuterTar(t, [2]string{"manifest.json", "[]"}), "holds no image labelled dev.carvel.imgpkg.bundle"},
		{"descriptor that is neither image nor index (imgpkg panics)", writeOuterTar(t, [2]string{"manifest.json", "[{}]"}), "imgpkg failed: Unknown item"},
		{"image without refs (imgpkg panics)", writeOuterTar(t, [2]string{"manifest.json", `[{"Image":{"Refs":[],"Manifest":{"Digest":"sha256:` + strings.Repeat("a", 64) + `","Raw":"{}"}}}]`}), "imgpkg failed"},
		{"bundle layer tampered", rewriteTar(t, fx.tarPath, func(name string, body []byte) []byte {
			if name == bundleLayer {
				body = bytes.Clone(body)
				body[len(body)/2] ^= 0xff
			}
			return body
		}), "bundle layer"},
		{"bundle layer missing", rewriteTar(t, fx.tarPath, func(name string, body []byte) []byte {
			if name == bundleLayer {
				return nil
			}
			return body
		}), "the tarball is corrupt"},
		{"bundle label removed from the config", editBundle(t, fx.tarPath, fx.digest, func(d *imagedesc.ImageDescriptor) {
			d.Config.Raw = strings.Replace(d.Config.Raw, bundletest.BundleLabel, "dev.carvel.imgpkg.elsewise", 1)
		}), "the config does not match its digest"},
		{"manifest changed under its digest", editBundle(t, fx.tarPath, fx.digest, func(d *imagedesc.ImageDescriptor) {
			d.Manifest.Raw += " "
		}), "the manifest does not match its digest"},
		{"two root bundles", editAll(t, fx.tarPath, func(ds []imagedesc.ImageOrImageIndexDescriptor) []imagedesc.ImageOrImageIndexDescriptor {
			for _, d := range ds {
				if d.Image != nil && d.Image.Labels == nil {
					d.Image.Labels = map[string]string{"dev.carvel.imgpkg.copy.root-bundle": ""}
					break
				}
			}
			return ds
		}), "2 candidate root bundles"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			source := bundletest.TarballOf(fx.srv, bundletest.RepoName(tc.name)+".tar", tc.path)
			_, err := s.fetcher(t, trust(fx.srv)).Fetch(context.Background(), source, nil)
			require.ErrorIs(t, err, bundle.ErrHostile)
			require.ErrorContains(t, err, tc.msg)
			s.requireOnly(t)
		})
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// editAll rewrites the descriptors in an imgpkg tarball's manifest.json.
func editAll(t *testing.T, path string, edit func([]imagedesc.ImageOrImageIndexDescriptor) []imagedesc.ImageOrImageIndexDescriptor) string {
	t.Helper()
	return rewriteTar(t, path, func(name string, body []byte) []byte {
		if name != "manifest.json" {
			return body
		}
		var descs []imagedesc.ImageOrImageIndexDescriptor
		require.NoError(t, json.Unmarshal(body, &descs))
		out, err := json.Marshal(edit(descs))
		require.NoError(t, err)
		return out
	})
}

// editBundle rewrites the bundle image's descriptor (found by digest).
func editBundle(t *testing.T, path, digest string, edit func(*imagedesc.ImageDescriptor)) string {
	t.Helper()
	found := false
	p := editAll(t, path, func(ds []imagedesc.ImageOrImageIndexDescriptor) []imagedesc.ImageOrImageIndexDescriptor {
		for _, d := range ds {
			if d.Image != nil && d.Image.Manifest.Digest == digest {
				edit(d.Image)
				found = true
			}
		}
		return ds
	})
	require.True(t, found, "bundle %s is in the tarball", digest)
	return p
}
