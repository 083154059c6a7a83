// Package cli holds the flags and start-up steps every binary shares:
// logging, tokens, signal handling.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/logging"
)

// Common are the flags of every binary.
type Common struct {
	LogFormat string
	LogLevel  string
	// Tokens is "principal:token,…"; empty means the development token in
	// TokenDir.
	Tokens string
	// ServiceToken is sent when calling other services; empty means the
	// first configured token source (the development token by default).
	ServiceToken string
}

// RegisterFlags binds the common flags, with environment defaults.
func (c *Common) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.LogFormat, "log-format", EnvOr("VCFSM_LOG_FORMAT", "text"), "log format: text or json (env VCFSM_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", EnvOr("VCFSM_LOG_LEVEL", "info"), "log level: debug, info, warn, error (env VCFSM_LOG_LEVEL)")
	fs.StringVar(&c.Tokens, "tokens", EnvOr("VCFSM_TOKENS", ""), "accepted bearer tokens as principal:token,… (env VCFSM_TOKENS); default: a development token kept in the data directory")
	fs.StringVar(&c.ServiceToken, "service-token", EnvOr("VCFSM_SERVICE_TOKEN", ""), "token this process sends to other services (env VCFSM_SERVICE_TOKEN)")
}

// Logger builds the logger.
func (c *Common) Logger(w io.Writer) (*slog.Logger, error) {
	return logging.New(w, c.LogFormat, c.LogLevel)
}

// Auth resolves the accepted tokens and the token to send to peers. With no
// tokens configured it uses (creating on first start) the development token
// in tokenDir and tells the operator where it is, never what it is.
func (c *Common) Auth(tokenDir string, log *slog.Logger) (*auth.Tokens, string, error) {
	if c.Tokens != "" {
		tokens, err := auth.ParseTokens(c.Tokens)
		if err != nil {
			return nil, "", fmt.Errorf("--tokens: %w", err)
		}
		if tokens.Len() == 0 {
			return nil, "", fmt.Errorf("--tokens: no token given")
		}
		if c.ServiceToken == "" {
			return nil, "", fmt.Errorf("--service-token is required with --tokens: the token this process sends to the other services")
		}
		if _, ok := tokens.Authenticate(c.ServiceToken); !ok {
			log.Warn("the --service-token is not among this process's own --tokens; peers must accept it")
		}
		return tokens, c.ServiceToken, nil
	}
	token, path, created, err := auth.EnsureDevToken(tokenDir)
	if err != nil {
		return nil, "", err
	}
	tokens, err := auth.NewTokens(map[string]string{"admin": token})
	if err != nil {
		return nil, "", err
	}
	if created {
		log.Info("no --tokens configured: generated a development bearer token", "file", path, "use", fmt.Sprintf("export TOKEN=$(cat %s)", path))
	} else {
		log.Info("no --tokens configured: using the development bearer token", "file", path)
	}
	peer := c.ServiceToken
	if peer == "" {
		peer = token
	}
	return tokens, peer, nil
}

// SignalContext is cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// EnvOr returns the environment variable or def.
func EnvOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}
