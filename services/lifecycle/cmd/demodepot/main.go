// Command demodepot is a development depot for the README's walkthrough: an
// in-process OCI registry on loopback holding a small demo VCF Service
// bundle, pushed with the real imgpkg, so `oci://127.0.0.1:5000/demo/bundle:1.0.0`
// can be installed without any external registry. With --tar it also
// writes the bundle as an imgpkg tarball (imgpkg copy --to-tar).
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	imgpkgcmd "carvel.dev/imgpkg/pkg/imgpkg/cmd"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/vcfsm/vcfsm/platform/cli"
)

//go:embed all:bundle
var bundleFS embed.FS

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demodepot:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := flag.NewFlagSet("demodepot", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:5000", "registry listen address (loopback: plain HTTP)")
	tarOut := fs.String("tar", "", "also write the bundle as an imgpkg tarball to this path")
	if err := cli.Parse(fs, os.Args[1:]); err != nil {
		return err
	}

	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0))), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	defer func() { _ = srv.Close() }()

	dir, err := os.MkdirTemp("", "demo-bundle-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := copyTree(dir); err != nil {
		return err
	}
	ref := lis.Addr().String() + "/demo/bundle:1.0.0"
	if err := imgpkg("push", "-b", ref, "-f", dir, "--registry-insecure"); err != nil {
		return fmt.Errorf("imgpkg push: %w", err)
	}
	fmt.Printf("demo bundle pushed: oci://%s\n", ref)
	if *tarOut != "" {
		if err := imgpkg("copy", "-b", ref, "--to-tar", *tarOut, "--registry-insecure"); err != nil {
			return fmt.Errorf("imgpkg copy --to-tar: %w", err)
		}
		fmt.Printf("demo bundle tarball written: %s\n", *tarOut)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println("serving until interrupted")
	<-ctx.Done()
	return nil
}

func imgpkg(args ...string) error {
	cmd := imgpkgcmd.NewDefaultImgpkgCmd(ui.NewConfUI(ui.NewNoopLogger()))
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(os.Stderr)
	return cmd.Execute()
}

func copyTree(dst string) error {
	return fs.WalkDir(bundleFS, "bundle", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("bundle", p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := bundleFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
