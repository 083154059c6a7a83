// Command devcerts writes a development CA and one certificate (server and
// client use) into a directory, as `vcfsm --dev-tls` does, valid for
// localhost and the given host names: the compose stack runs it once so
// its services talk gRPC over mTLS. Not for production certificates.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/seal"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "devcerts:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("devcerts", flag.ContinueOnError)
	dir := fs.String("dir", "./data/tls", "directory to write ca.crt, tls.crt and tls.key into (kept when present)")
	hosts := fs.String("hosts", "", "comma-separated further host names or addresses the certificate is valid for")
	encKey := fs.Bool("encryption-key", false, "also write a development keyring sealing Secrets at rest (<dir>/encryption-key, mode 0600), shared by every lifecycle replica through --encryption-key-file")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	files, created, err := cli.EnsureDevTLS(*dir, strings.Split(*hosts, ",")...)
	if err != nil {
		return err
	}
	verb := "kept"
	if created {
		verb = "wrote"
	}
	fmt.Printf("%s %s, %s, %s\n", verb, files.CA, files.Cert, files.Key)
	if *encKey {
		// Replicas sharing one store must seal and open Secrets with one
		// keyring; a key generated per replica would lock the others out.
		path, created, err := seal.EnsureDevKey(*dir)
		if err != nil {
			return fmt.Errorf("--encryption-key: %w", err)
		}
		verb = "kept"
		if created {
			verb = "wrote"
		}
		fmt.Printf("%s %s\n", verb, path)
	}
	return nil
}
