// Package demodepot pushes the small demo VCF Service the README's
// walkthrough, the compose stack and the console's browser tests install,
// with the real imgpkg, in three versions:
//
//   - 1.0.0: the demo as it is in bundle/;
//   - 1.1.0: the same resources, with a pre-check hook declared (service
//     demo-hook in the service's namespace, POST precheck/v1): upgrading from
//     it asks the hook;
//   - 2.0.0: the workload's metadata changes (every SupervisorService is
//     reconfigured; the workload version, the role and the grants stay, so
//     2.0.0 can be rolled back).
//
// cmd/demodepot serves them from an in-process OCI registry.
package demodepot

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	imgpkgcmd "carvel.dev/imgpkg/pkg/imgpkg/cmd"
	"github.com/cppforlife/go-cli-ui/ui"
)

//go:embed all:bundle
var bundleFS embed.FS

// Repository is where the versions are pushed in the registry, each
// tagged with its version: <registry>/demo/bundle:1.0.0.
const Repository = "demo/bundle"

// HookService is the pre-check hook 1.1.0 declares; the dispatcher calls
// it at HookService.<the service's namespace>.svc.cluster.local:80.
const HookService = "demo-hook"

// Versions lists the pushed versions, oldest first.
func Versions() []string {
	out := make([]string, 0, len(demoVersions))
	for _, v := range demoVersions {
		out = append(out, v.version)
	}
	return out
}

// demoVersion is one pushed version: text replacements applied to the
// files of bundle/ (path relative to it).
type demoVersion struct {
	version string
	edits   map[string][][2]string
}

const hookAnnotations = `    appplatform.vmware.com/supervisor-version-constraints: ">=9.0.0.0"
    appplatform.vmware.com/compatibility-check_service: ` + HookService + `
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

// PushAll pushes every version to the plain-HTTP registry at host:port.
func PushAll(registry string) error {
	for _, v := range demoVersions {
		if err := push(registry, v); err != nil {
			return err
		}
	}
	return nil
}

// CopyToTar writes the bundle ref (host:port/repository:tag, plain HTTP)
// as an imgpkg tarball, as `imgpkg copy --to-tar` does.
func CopyToTar(ref, path string) error {
	if err := imgpkg("copy", "-b", ref, "--to-tar", path, "--registry-insecure"); err != nil {
		return fmt.Errorf("imgpkg copy --to-tar: %w", err)
	}
	return nil
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
	ref := registry + "/" + Repository + ":" + v.version
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
