package app

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Limits bound what one caller can make the gateway do. Zero fields take
// the defaults below.
type Limits struct {
	// MaxBodyBytes caps a request body (413 beyond it).
	MaxBodyBytes int64
	// MaxQueryBytes caps the raw query string (414 beyond it).
	MaxQueryBytes int
	// MaxHeaderBytes caps the request line and headers (431 beyond it).
	MaxHeaderBytes int
	// RatePerSecond and RateBurst are each principal's token bucket (429
	// with Retry-After beyond it).
	RatePerSecond float64
	RateBurst     int
	// MaxWatches caps the open watch streams of one principal (429).
	MaxWatches int
	// WatchIdleTimeout closes a watch stream that sent nothing this long.
	WatchIdleTimeout time.Duration
	// ReadTimeout, WriteTimeout and IdleTimeout are the HTTP server's;
	// watch streams are exempt from WriteTimeout.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
}

// The defaults of Limits.
const (
	DefaultMaxBodyBytes     = 4 << 20
	DefaultMaxQueryBytes    = 16 << 10
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultRatePerSecond    = 50
	DefaultRateBurst        = 100
	DefaultMaxWatches       = 16
	DefaultWatchIdleTimeout = 10 * time.Minute
	DefaultReadTimeout      = time.Minute
	DefaultWriteTimeout     = 2 * time.Minute
	DefaultIdleTimeout      = 2 * time.Minute
)

// DefaultLimits returns the defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes: DefaultMaxBodyBytes, MaxQueryBytes: DefaultMaxQueryBytes, MaxHeaderBytes: DefaultMaxHeaderBytes,
		RatePerSecond: DefaultRatePerSecond, RateBurst: DefaultRateBurst,
		MaxWatches: DefaultMaxWatches, WatchIdleTimeout: DefaultWatchIdleTimeout,
		ReadTimeout: DefaultReadTimeout, WriteTimeout: DefaultWriteTimeout, IdleTimeout: DefaultIdleTimeout,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	pick := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.MaxBodyBytes, d.MaxBodyBytes)
	for _, p := range []struct{ v, def *int }{{&l.MaxQueryBytes, &d.MaxQueryBytes}, {&l.MaxHeaderBytes, &d.MaxHeaderBytes}, {&l.RateBurst, &d.RateBurst}, {&l.MaxWatches, &d.MaxWatches}} {
		if *p.v <= 0 {
			*p.v = *p.def
		}
	}
	if l.RatePerSecond <= 0 {
		l.RatePerSecond = d.RatePerSecond
	}
	for _, p := range []struct{ v, def *time.Duration }{{&l.WatchIdleTimeout, &d.WatchIdleTimeout}, {&l.ReadTimeout, &d.ReadTimeout}, {&l.WriteTimeout, &d.WriteTimeout}, {&l.IdleTimeout, &d.IdleTimeout}} {
		if *p.v <= 0 {
			*p.v = *p.def
		}
	}
	return l
}

// Config is the REST edge's configuration: limits and HTTPS.
type Config struct {
	Limits Limits
	// TLSCert and TLSKey, when set, make the gateway serve HTTPS.
	TLSCert string
	TLSKey  string
}

// RegisterFlags binds the REST edge's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Limits = DefaultLimits()
	l := &c.Limits
	fs.Int64Var(&l.MaxBodyBytes, "http-max-body-bytes", l.MaxBodyBytes, "largest REST request body; larger ones are refused with 413 before they are read")
	fs.IntVar(&l.MaxQueryBytes, "http-max-query-bytes", l.MaxQueryBytes, "longest REST query string (414 beyond it)")
	fs.IntVar(&l.MaxHeaderBytes, "http-max-header-bytes", l.MaxHeaderBytes, "largest REST request line and headers (431 beyond it)")
	fs.Float64Var(&l.RatePerSecond, "rate-limit", l.RatePerSecond, "REST requests per second each principal may make on average (429 with Retry-After beyond it)")
	fs.IntVar(&l.RateBurst, "rate-burst", l.RateBurst, "REST requests a principal may make at once above --rate-limit")
	fs.IntVar(&l.MaxWatches, "max-watches", l.MaxWatches, "open watch streams per principal (429 beyond it)")
	fs.DurationVar(&l.WatchIdleTimeout, "watch-idle-timeout", l.WatchIdleTimeout, "close a watch stream that sent nothing this long")
	fs.DurationVar(&l.ReadTimeout, "http-read-timeout", l.ReadTimeout, "longest time to read a REST request, body included")
	fs.DurationVar(&l.WriteTimeout, "http-write-timeout", l.WriteTimeout, "longest time to write a REST response (watch streams excepted)")
	fs.DurationVar(&l.IdleTimeout, "http-idle-timeout", l.IdleTimeout, "close idle keep-alive REST connections after this long")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM certificate (chain) the REST port serves HTTPS with (with --tls-key)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
}

// HTTPServer is the REST server with the configured timeouts, header cap
// and (when configured) TLS.
func (c Config) HTTPServer(h http.Handler) (*http.Server, error) {
	l := c.Limits.withDefaults()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	return srv, nil
}

// Serve serves srv on lis, over TLS when HTTPServer configured it.
func Serve(srv *http.Server, lis net.Listener) error {
	if srv.TLSConfig != nil {
		return srv.ServeTLS(lis, "", "")
	}
	return srv.Serve(lis)
}

// Scheme is "https" when srv serves TLS, else "http".
func Scheme(srv *http.Server) string {
	if srv.TLSConfig != nil {
		return "https"
	}
	return "http"
}
