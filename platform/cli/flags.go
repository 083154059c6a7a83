package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/peterbourgon/ff/v3"
)

// EnvPrefix prefixes the environment variable of every flag: --data-dir
// is VCFSM_DATA_DIR.
const EnvPrefix = "VCFSM"

// ConfigFlag names the config file flag every binary has: one "name value"
// per line, the same names as the flags.
const ConfigFlag = "config"

// EnvName is the environment variable that sets a flag.
func EnvName(flagName string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// Parse reads fs from args, then from the environment (VCFSM_<FLAG_NAME>),
// then from the config file named by --config; earlier sources win. Every
// binary parses its flags here, so every flag is readable from the
// environment and a config file. Environment values are applied after the
// command line is parsed, never as flag defaults, so usage text (printed on
// a mistyped flag) never shows them.
//
// --version (on the command line only: an environment variable named
// VCFSM_VERSION is common for other purposes) prints Version(fs.Name()) to
// stdout and exits 0, as -h prints usage and exits.
func Parse(fs *flag.FlagSet, args []string) error {
	if VersionAsked(args) {
		_, _ = fmt.Fprintln(os.Stdout, Version(fs.Name()))
		os.Exit(0)
	}
	if fs.Lookup(ConfigFlag) == nil {
		fs.String(ConfigFlag, "", "file of flag values, one 'name value' per line")
	}
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
		_, _ = fmt.Fprintf(fs.Output(), "  -%s\n    \tprint the version, commit and Go version, then exit\n", VersionFlag)
	}
	err := ff.Parse(fs, args,
		ff.WithEnvVarPrefix(EnvPrefix),
		ff.WithConfigFileFlag(ConfigFlag),
		ff.WithConfigFileParser(ff.PlainParser),
	)
	if err != nil {
		return fmt.Errorf("flags: %w", err)
	}
	return nil
}

// VersionAsked reports whether args ask for --version (before a "--").
func VersionAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		switch strings.TrimLeft(a, "-") {
		case VersionFlag, VersionFlag + "=true":
			return true
		}
	}
	return false
}

// Secret is a flag value that never shows itself: usage prints no default
// and String is empty, so a secret cannot reach usage text or a log of the
// flags.
type Secret struct {
	v string
}

// NewSecret holds v.
func NewSecret(v string) Secret { return Secret{v: v} }

// Set implements flag.Value.
func (s *Secret) Set(v string) error {
	s.v = v
	return nil
}

// String implements flag.Value; it never reveals the secret.
func (s *Secret) String() string { return "" }

// Value is the secret itself.
func (s *Secret) Value() string { return s.v }

// ReadSecretFile reads a secret file that only its owner may read: a file
// readable by group or others is refused, naming its mode.
func ReadSecretFile(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if info.IsDir() {
		return "", fmt.Errorf("%s is a directory", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s has mode %#o: a secret file must be readable by its owner only (chmod 600 %s)", path, perm, path)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(string(raw)) == "" {
		return "", errors.New(path + " is empty")
	}
	return string(raw), nil
}
