// Package config reads and writes vcfctl's contexts file and resolves the
// context a command uses (flags and environment override the file).
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Context is one named server with its credentials.
type Context struct {
	Server string `json:"server"`
	// Token is stored only when given on standard input; TokenFile is read
	// at every use, so a rotated file is picked up.
	Token     string `json:"token,omitempty"`
	TokenFile string `json:"tokenFile,omitempty"`
	CAFile    string `json:"caFile,omitempty"`
}

// File is the config file's content.
type File struct {
	Current  string             `json:"current,omitempty"`
	Contexts map[string]Context `json:"contexts,omitempty"`
}

// Env is the environment a command runs in (injected for tests).
type Env func(string) string

// Path is $XDG_CONFIG_HOME/vcfctl/config.yaml, falling back to
// ~/.config/vcfctl/config.yaml.
func Path(env Env) (string, error) {
	base := env("XDG_CONFIG_HOME")
	if base == "" {
		home := env("HOME")
		if home == "" {
			return "", errors.New("neither XDG_CONFIG_HOME nor HOME is set: cannot locate the vcfctl config")
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "vcfctl", "config.yaml"), nil
}

// Load reads the file; a missing file is an empty config.
func Load(path string) (*File, error) {
	f := &File{Contexts: map[string]Context{}}
	b, err := os.ReadFile(path) //nolint:gosec // the user's own config path
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, f); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if f.Contexts == nil {
		f.Contexts = map[string]Context{}
	}
	return f, nil
}

// Save writes the file with mode 0600 (it may hold a token).
func (f *File) Save(path string) error {
	b, err := yaml.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create config directory: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}

// Names lists the contexts, sorted.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Contexts))
	for n := range f.Contexts {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// DefaultName derives a context name from a server URL (its host:port).
func DefaultName(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return server
	}
	return u.Host
}

// Resolved is what a command connects with.
type Resolved struct {
	Name   string
	Server string
	Token  string
	CAFile string
	// TokenSource says where the token came from, for error messages:
	// "token file <path>", "VCFCTL_TOKEN", "the token stored in the
	// context" or "no token".
	TokenSource string
}

// Resolve picks the context: the --context flag, then VCFCTL_CONTEXT, then
// the current one; VCFCTL_SERVER, VCFCTL_TOKEN and VCFCTL_CA_FILE override
// its fields (and work without any config file).
func Resolve(f *File, flagContext string, env Env) (Resolved, error) {
	name := flagContext
	if name == "" {
		name = env("VCFCTL_CONTEXT")
	}
	if name == "" {
		name = f.Current
	}
	var c Context
	if name != "" {
		var ok bool
		if c, ok = f.Contexts[name]; !ok {
			return Resolved{}, fmt.Errorf("context %q does not exist (known: %s); run 'vcfctl login' or 'vcfctl context list'", name, strings.Join(f.Names(), ", "))
		}
	}
	r := Resolved{Name: name, Server: c.Server, Token: c.Token, CAFile: c.CAFile, TokenSource: "no token"}
	if r.Token != "" {
		r.TokenSource = "the token stored in the context"
	}
	if v := env("VCFCTL_TOKEN"); v != "" {
		r.Token, r.TokenSource = v, "VCFCTL_TOKEN"
	} else if c.TokenFile != "" && r.Token == "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return Resolved{}, fmt.Errorf("context %q: read token file: %w", name, err)
		}
		r.Token, r.TokenSource = strings.TrimSpace(string(b)), "token file "+c.TokenFile
	}
	if v := env("VCFCTL_SERVER"); v != "" {
		r.Server = v
	}
	if v := env("VCFCTL_CA_FILE"); v != "" {
		r.CAFile = v
	}
	if r.Server == "" {
		return Resolved{}, errors.New("no server: run 'vcfctl login --server URL ...' or set VCFCTL_SERVER")
	}
	return r, nil
}
