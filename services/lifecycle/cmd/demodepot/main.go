// Command demodepot is a development depot for the README's walkthrough and
// the compose stack: an in-process OCI registry holding the demo VCF Service
// of package demodepot in three versions (1.0.0; 1.1.0 with a pre-check
// hook; 2.0.0), pushed with the real imgpkg, so
// `oci://127.0.0.1:5000/demo/bundle:1.0.0` can be installed and upgraded
// without any external registry.
//
// With --tar it also writes 1.0.0 as an imgpkg tarball (imgpkg copy --to-tar).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/services/lifecycle/demodepot"
)

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
	if err := demodepot.PushAll(pushAt); err != nil {
		return err
	}
	for _, v := range demodepot.Versions() {
		fmt.Printf("demo bundle pushed: oci://%s/%s:%s\n", shown, demodepot.Repository, v)
	}
	if *tarOut != "" {
		if err := demodepot.CopyToTar(pushAt+"/"+demodepot.Repository+":1.0.0", *tarOut); err != nil {
			return err
		}
		fmt.Printf("demo bundle tarball written: %s\n", *tarOut)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println("serving until interrupted")
	<-ctx.Done()
	return nil
}
