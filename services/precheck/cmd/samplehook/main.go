// Command samplehook serves a VCF Service's upgrade pre-check hook with
// configurable answers, for the dev stack and demos. It implements the
// response contract of seed 000 and logs every request and answer.
//
//	samplehook --listen 127.0.0.1:8443 --tls-cert tls.crt --tls-key tls.key \
//	    --result WARNING="Custom resource X will be deprecated" --token "$TOKEN"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/services/precheck/internal/samplehook"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "samplehook:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("samplehook", flag.ExitOnError)
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	listen := fs.String("listen", "127.0.0.1:8480", "listen address")
	certFile := fs.String("tls-cert", "", "PEM server certificate; with --tls-key serves HTTPS")
	keyFile := fs.String("tls-key", "", "PEM private key of --tls-cert")
	var token cli.Secret
	fs.Var(&token, "token", "accept only this bearer token; empty accepts any caller")
	answers := fs.String("answers", "", "JSON or YAML answers file: status, delay, hang, results, body, contentType, paths")
	status := fs.Int("status", 200, "HTTP status of the answer (overrides the answers file)")
	delay := fs.Duration("delay", 0, "hold every answer back this long (overrides the answers file)")
	body := fs.String("body", "", "answer this body verbatim instead of a results list (overrides the answers file)")
	var results []samplehook.Result
	fs.Func("result", "a result SEVERITY=MESSAGE to answer, repeatable (replaces the answers file's results)", func(v string) error {
		sev, msg, ok := strings.Cut(v, "=")
		if !ok || sev == "" {
			return fmt.Errorf("want SEVERITY=MESSAGE, got %q", v)
		}
		results = append(results, samplehook.Result{Severity: sev, Message: msg})
		return nil
	})
	if err := cli.Parse(fs, args); err != nil {
		return err
	}

	log, err := logging.New(os.Stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	var file samplehook.File
	if *answers != "" {
		if file, err = samplehook.LoadFile(*answers); err != nil {
			return err
		}
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "status":
			file.Status = *status
		case "delay":
			file.Delay = samplehook.Duration(*delay)
		case "body":
			file.Body = *body
		case "result":
			file.Results = results
		}
	})
	if (*certFile == "") != (*keyFile == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}

	srv := &http.Server{
		Addr:              *listen,
		Handler:           samplehook.WithHealth(samplehook.NewHandler(samplehook.Config{Answers: file, Token: token.Value(), Logger: log})),
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Info("serving the sample pre-check hook", "listen", *listen, "tls", *certFile != "", "authenticates", token.Value() != "")
	return serve(srv, *certFile, *keyFile)
}

// serve runs srv (HTTPS when a certificate is given) until a signal, then
// shuts it down gracefully.
func serve(srv *http.Server, certFile, keyFile string) error {
	ctx, stop := cli.SignalContext()
	defer stop()
	errc := make(chan error, 1)
	go func() {
		if certFile != "" {
			errc <- srv.ListenAndServeTLS(certFile, keyFile)
		} else {
			errc <- srv.ListenAndServe()
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, errc)
}

// shutdown stops the server gracefully and waits for it to return.
func shutdown(srv *http.Server, errc <-chan error) error {
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
