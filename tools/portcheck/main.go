// Command portcheck finds test code that depends on a fixed port being
// free, which fails `make test` on any machine where something already
// listens there (a developer's `make run` in another terminal, another
// engineer's test run). It reports, with the file and line:
//
//   - a listen address with a fixed port written in test code: a string
//     literal passed to a Listen* function (net.Listen, grpcx.Listen,
//     http.ListenAndServe…), given to a field or variable whose name says
//     listen (GRPCListen, MetricsListen, Addr of an http.Server…), following
//     a --…listen flag in an argument list, set as a …LISTEN environment
//     variable, or written as listen=ADDR / listen: ADDR inside a string;
//   - one of the project's binaries started (exec.Command) without every
//     listen flag that has a default address, so that it would listen on
//     that default (vcfsm --metrics-listen 127.0.0.1:9100). The binaries and
//     their listen flags come from docs/configuration.md, which
//     TestConfigurationDoc keeps equal to the binaries' own flag sets.
//
// Port 0 (the kernel picks a free port) is the only port a test listens on.
// Test code is every _test.go file and every file that imports "testing"
// (the helper packages such as bundletest and onebox). Directories named
// testdata, gen, and those starting with a dot are not read.
//
// What it cannot see: an address built at run time, a binary whose path is
// not written in the function that starts it, flags read from a --config
// file. Dialing a fixed port that nothing is supposed to answer (the
// unreachable-source cases dial 127.0.0.1:1) is not a listen address and
// is allowed.
//
// Usage: portcheck [-config FILE] DIR
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run checks the tree named in args and reports to stdout; it returns the
// exit status: 0 clean, 1 fixed ports found, 2 the check could not run.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("portcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the binaries' flag reference (default: DIR/docs/configuration.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		_, _ = fmt.Fprintln(stderr, "usage: portcheck [-config FILE] DIR")
		return 2
	}
	root := fs.Arg(0)
	if *config == "" {
		*config = filepath.Join(root, "docs", "configuration.md")
	}
	doc, err := os.ReadFile(*config)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "portcheck: the binaries' listen flags: %v\n", err)
		return 2
	}
	bins, err := parseBinaries(string(doc))
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "portcheck: %s: %v\n", *config, err)
		return 2
	}
	findings, err := checkTree(root, bins)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "portcheck: %v\n", err)
		return 2
	}
	for _, f := range findings {
		_, _ = fmt.Fprintf(stdout, "%s:%d: %s\n", f.File, f.Line, f.Msg)
	}
	if len(findings) > 0 {
		_, _ = fmt.Fprintf(stderr, "portcheck: %d fixed port(s) in test code: tests listen on port 0 and read the bound address back\n", len(findings))
		return 1
	}
	return 0
}
