package observability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsServer is a running metrics listener.
type MetricsServer struct {
	// Addr is the bound address (useful with port 0).
	Addr   string
	done   chan error
	cancel context.CancelFunc
}

// ServeMetrics serves the registry as /metrics on addr until ctx ends. The
// listener is separate from the API ports so it can stay on loopback or a
// scrape network without the API's authentication.
func (t *Telemetry) ServeMetrics(ctx context.Context, addr string, log *slog.Logger) (*MetricsServer, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{
		Registry:          t.Registry,
		EnableOpenMetrics: true,
	}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	m := &MetricsServer{Addr: lis.Addr().String(), done: make(chan error, 1), cancel: cancel}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	go func() {
		var err error
		select {
		case err = <-serveErr:
		case <-ctx.Done():
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = srv.Shutdown(shutdownCtx)
			cancel()
			err = <-serveErr
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		m.done <- err
	}()
	log.Info("serving metrics", "listen", "http://"+m.Addr+"/metrics")
	return m, nil
}

// Stop shuts the listener down (if its context has not already) and
// waits for it.
func (m *MetricsServer) Stop() error {
	m.cancel()
	return <-m.done
}
