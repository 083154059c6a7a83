// Command healthprobe is the containers' health check: the images are built
// FROM scratch (no shell, no curl), so compose runs this to ask a gRPC
// service's health or an HTTP endpoint such as the gateway's /readyz.
//
//	healthprobe grpc 127.0.0.1:9091 vcfservices.lifecycle.v1.LifecycleService
//	healthprobe http http://127.0.0.1:8080/readyz
//
// A gRPC probe speaks mTLS with the container's own certificate when the
// service's VCFSM_GRPC_TLS_CERT, VCFSM_GRPC_TLS_KEY and VCFSM_GRPC_TLS_CA are
// set (a service with mTLS refuses a plain connection, health included).
// It exits 0 when the target is SERVING (HTTP: answers 2xx), 1 otherwise.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/vcfsm/vcfsm/platform/cli"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "healthprobe:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch {
	case len(args) >= 2 && args[0] == "grpc":
		service := ""
		if len(args) > 2 {
			service = args[2]
		}
		return probeGRPC(ctx, args[1], service)
	case len(args) == 2 && args[0] == "http":
		return probeHTTP(ctx, args[1])
	}
	return errors.New("usage: healthprobe grpc ADDR [SERVICE] | healthprobe http URL")
}

func probeGRPC(ctx context.Context, addr, service string) error {
	creds := cli.GRPCTLS{Cert: os.Getenv("VCFSM_GRPC_TLS_CERT"), Key: os.Getenv("VCFSM_GRPC_TLS_KEY"), CA: os.Getenv("VCFSM_GRPC_TLS_CA")}
	opts, err := creds.DialOptions()
	if err != nil {
		return fmt.Errorf("mTLS from VCFSM_GRPC_TLS_*: %w", err)
	}
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return fmt.Errorf("health of %q at %s: %w", service, addr, err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("%q at %s is %s", service, addr, resp.GetStatus())
	}
	return nil
}

func probeHTTP(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}
