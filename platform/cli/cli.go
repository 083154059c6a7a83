// Package cli holds the flags and start-up steps every binary shares:
// flag parsing (command line, environment, config file), logging, tokens,
// TLS, signal handling.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/logging"
)

// Common are the flags of every binary.
type Common struct {
	LogFormat string
	LogLevel  string
	// Tokens is "principal:role:token,…" (or principal:token for admin);
	// empty, with no TokensFile, means the development token in the data
	// directory.
	Tokens Secret
	// TokensFile holds token entries, one per line (mode 0600).
	TokensFile string
	// ServiceToken is sent when calling other services; empty means the
	// development token.
	ServiceToken Secret
	// ServiceTokenFile holds ServiceToken (mode 0600).
	ServiceTokenFile string
	// GRPCTLS secures gRPC between services (mTLS).
	GRPCTLS GRPCTLS
	// Limits bound every gRPC server.
	Limits GRPCLimits
}

// RegisterFlags binds the common flags. Every flag also reads the
// environment variable VCFSM_<FLAG_NAME> (see Parse).
func (c *Common) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.Var(&c.Tokens, "tokens", "accepted bearer tokens as principal:role:token,… (roles: admin, operator, viewer, service; principal:token means admin); prefer --tokens-file. Default: a development token kept in the data directory")
	fs.StringVar(&c.TokensFile, "tokens-file", "", "file of accepted bearer tokens, one principal:role:token per line (# comments allowed); must be mode 0600")
	fs.Var(&c.ServiceToken, "service-token", "token this process sends to other services (role service); prefer --service-token-file")
	fs.StringVar(&c.ServiceTokenFile, "service-token-file", "", "file holding the token this process sends to other services; must be mode 0600")
	c.GRPCTLS.RegisterFlags(fs)
	c.Limits.RegisterFlags(fs)
}

// Logger builds the logger.
func (c *Common) Logger(w io.Writer) (*slog.Logger, error) {
	return logging.New(w, c.LogFormat, c.LogLevel)
}

// configuredTokens reads --tokens and --tokens-file; an error names the
// entry or the line, never its content.
func (c *Common) configuredTokens() (*auth.Tokens, error) {
	tokens, err := auth.ParseTokens(c.Tokens.Value())
	if err != nil {
		return nil, fmt.Errorf("--tokens: %w", err)
	}
	if c.TokensFile != "" {
		raw, err := ReadSecretFile(c.TokensFile)
		if err != nil {
			return nil, fmt.Errorf("--tokens-file: %w", err)
		}
		if err := tokens.AddLines(raw); err != nil {
			return nil, fmt.Errorf("--tokens-file %s: %w", c.TokensFile, err)
		}
	}
	return tokens, nil
}

func (c *Common) serviceToken() (string, error) {
	if c.ServiceTokenFile == "" {
		return c.ServiceToken.Value(), nil
	}
	if c.ServiceToken.Value() != "" {
		return "", fmt.Errorf("--service-token and --service-token-file exclude each other")
	}
	raw, err := ReadSecretFile(c.ServiceTokenFile)
	if err != nil {
		return "", fmt.Errorf("--service-token-file: %w", err)
	}
	return strings.TrimSpace(raw), nil
}

// AcceptedTokens resolves the tokens this process accepts: the configured
// ones, or (creating it on first start) the development token in tokenDir,
// logging where it is, never what it is. dev is the development token when
// it is in use.
func (c *Common) AcceptedTokens(tokenDir string, log *slog.Logger) (tokens *auth.Tokens, dev string, err error) {
	configured, err := c.configuredTokens()
	if err != nil {
		return nil, "", err
	}
	if configured.Len() > 0 {
		return configured, "", nil
	}
	if strings.TrimSpace(c.Tokens.Value()) != "" || c.TokensFile != "" {
		return nil, "", fmt.Errorf("--tokens: no token given")
	}
	token, path, created, err := auth.EnsureDevToken(tokenDir)
	if err != nil {
		return nil, "", err
	}
	tokens, err = auth.NewTokens(map[string]string{"admin": token})
	if err != nil {
		return nil, "", err
	}
	if created {
		log.Info("no --tokens configured: generated a development bearer token", "file", path, "use", fmt.Sprintf("export TOKEN=$(cat %s)", path))
	} else {
		log.Info("no --tokens configured: using the development bearer token", "file", path)
	}
	return tokens, token, nil
}

// Auth resolves the accepted tokens and the token to send to peers.
func (c *Common) Auth(tokenDir string, log *slog.Logger) (*auth.Tokens, string, error) {
	tokens, dev, err := c.AcceptedTokens(tokenDir, log)
	if err != nil {
		return nil, "", err
	}
	peer, err := c.serviceToken()
	if err != nil {
		return nil, "", err
	}
	if dev != "" {
		if peer == "" {
			peer = dev
		}
		return tokens, peer, nil
	}
	if peer == "" {
		return nil, "", fmt.Errorf("--service-token or --service-token-file is required with --tokens: the token this process sends to the other services")
	}
	if id, ok := tokens.Lookup(peer); !ok {
		log.Warn("the service token is not among this process's own tokens; peers must accept it")
	} else if !id.Role.Has(auth.PermInternal) {
		log.Warn("the service token's role may not call the internal RPCs; give it role service", "principal", id.Principal, "role", id.Role)
	}
	return tokens, peer, nil
}

// SignalContext is cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
