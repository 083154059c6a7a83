package fixture

import (
	"context"
	"os"
	run "os/exec"
	"path/filepath"
	"testing"
)

func TestStartsBinaries(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "vcfsm")
	_ = run.Command(bin, "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0") // want `starts vcfsm without --metrics-listen \(default 127.0.0.1:9100\): give every listen flag port 0`
	_ = run.Command(bin, "--data-dir", dir)                                              // want `starts vcfsm without --grpc-listen \(default 127.0.0.1:9090\), --http-listen \(default 127.0.0.1:8080\), --metrics-listen \(default 127.0.0.1:9100\)`
	_ = run.CommandContext(ctx, filepath.Join(dir, "lifecycle"), "--data-dir", dir)      // want `starts lifecycle without --listen \(default 127.0.0.1:9091\)`
	partial := []string{"--grpc-listen", "127.0.0.1:0"}
	_ = run.Command(bin, partial...) // want `starts vcfsm without --http-listen .*, --metrics-listen`

	// Every listen flag given, in any of the flag package's forms.
	_ = run.Command(bin, "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	_ = run.Command(bin, "--grpc-listen=127.0.0.1:0", "-http-listen=127.0.0.1:0", "-metrics-listen", "")
	all := []string{"--listen", "127.0.0.1:0"}
	_ = run.CommandContext(ctx, filepath.Join(dir, "lifecycle"), all...)
	// Printing and exiting listens on nothing.
	_ = run.Command(bin, "--version")
	_ = run.Command(filepath.Join(dir, "lifecycle"), "-h")
	// A binary without listen flags, a tool, and a binary the function
	// does not name are not checked.
	_ = run.Command(filepath.Join(dir, "devcerts"), "--dir", dir)
	_ = run.Command("go", "build", "-o", bin, "./cmd/vcfsm")
	for _, p := range []string{"./cmd/vcfsm"} {
		_ = run.Command(filepath.Join(dir, filepath.Base(p)), "--no-such-flag")
	}
}

// The environment variable of a listen flag counts as giving it.
func TestStartsBinaryWithEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "vcfsm")
	cmd := run.Command(bin, "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "VCFSM_METRICS_LISTEN=")
}
