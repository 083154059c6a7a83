// Command demodepot is a development depot for the README's walkthrough and
// the compose stack: an in-process OCI registry holding a small demo VCF
// Service, pushed with the real imgpkg in three versions, so
// `oci://127.0.0.1:5000/demo/bundle:1.0.0` can be installed and upgraded
// without any external registry:
//
//   - 1.0.0: the demo as it is in bundle/;
//   - 1.1.0: the same resources, with a pre-check hook declared (service
//     demo-hook in the service's namespace, POST precheck/v1): upgrading from
//     it asks the hook;
//   - 2.0.0: the workload's metadata changes (every SupervisorService is
//     reconfigured; the workload version, the role and the grants stay, so
//     2.0.0 can be rolled back).
//
// With --tar it also writes 1.0.0 as an imgpkg tarball (imgpkg copy --to-tar).
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
	"strconv"
	"strings"
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
	listen := fs.String("listen", "127.0.0.1:5000", "registry listen address (plain HTTP: a development depot)")
	host := fs.String("host", "", "host[:port] clients reach the depot at, in the references printed (default: the listen address)")
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

	// imgpkg pushes over loopback whatever the listen address is.
	pushAt := net.JoinHostPort("127.0.0.1", strconv.Itoa(lis.Addr().(*net.TCPAddr).Port))
	shown := *host
	if shown == "" {
		shown = lis.Addr().String()
	}
	for _, v := range demoVersions {
		if err := push(pushAt, v); err != nil {
			return err
		}
		fmt.Printf("demo bundle pushed: oci://%s/demo/bundle:%s\n", shown, v.version)
	}
	ref := pushAt + "/demo/bundle:1.0.0"
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

// demoVersion is one pushed version: text replacements applied to the
// files of bundle/ (path relative to it).
type demoVersion struct {
	version string
	edits   map[string][][2]string
}

const hookAnnotations = `    appplatform.vmware.com/supervisor-version-constraints: ">=9.0.0.0"
    appplatform.vmware.com/compatibility-check_service: demo-hook
    appplatform.vmware.com/compatibility-check_url: precheck/v1
    appplatform.vmware.com/compatibility-check_method: POST`

var demoVersions = []demoVersion{
	{version: "1.0.0"},
	{version: "1.1.0", edits: map[string][][2]string{
		"package.yml": {
			{"demo.vcfsm.dev.1.0.0", "demo.vcfsm.dev.1.1.0"},
			{"version: 1.0.0", "version: 1.1.0"},
			{`    appplatform.vmware.com/supervisor-version-constraints: ">=9.0.0.0"`, hookAnnotations},
		},
	}},
	{version: "2.0.0", edits: map[string][][2]string{
		"package.yml": {
			{"demo.vcfsm.dev.1.0.0", "demo.vcfsm.dev.2.0.0"},
			{"version: 1.0.0", "version: 2.0.0"},
		},
		// The workload package stays at 1.0.0: kapp-controller cannot
		// downgrade a package, so a new workload version would make 2.0.0
		// impossible to roll back. Its metadata changes instead.
		"config/.vcf/dependencies.yml": {
			{"displayName: Demo workload", "displayName: Demo workload (2.0.0)"},
		},
	}},
}

// push writes version v's tree and pushes it with imgpkg.
func push(registry string, v demoVersion) error {
	dir, err := os.MkdirTemp("", "demo-bundle-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := copyTree(dir); err != nil {
		return err
	}
	for file, edits := range v.edits {
		if err := edit(filepath.Join(dir, file), edits); err != nil {
			return fmt.Errorf("demo %s: %w", v.version, err)
		}
	}
	ref := registry + "/demo/bundle:" + v.version
	if err := imgpkg("push", "-b", ref, "-f", dir, "--registry-insecure"); err != nil {
		return fmt.Errorf("imgpkg push %s: %w", ref, err)
	}
	return nil
}

// edit applies replacements to a file; each must match, so a change to
// bundle/ that breaks a version fails loudly instead of pushing 1.0.0 twice.
func edit(path string, edits [][2]string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text := string(raw)
	for _, e := range edits {
		if !strings.Contains(text, e[0]) {
			return fmt.Errorf("%s has no %q to replace", filepath.Base(path), e[0])
		}
		text = strings.ReplaceAll(text, e[0], e[1])
	}
	return os.WriteFile(path, []byte(text), 0o644)
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
