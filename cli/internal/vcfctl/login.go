package vcfctl

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vcfsm/vcfsm/cli/internal/api"
	"github.com/vcfsm/vcfsm/cli/internal/config"
)

// loginCmds are login and the contexts it saves.
type loginCmds struct {
	sess *session
	out  *printer
}

type loginOpts struct {
	server, tokenFile, name, caFile string
	tokenStdin                      bool
}

func (lc loginCmds) loginCmd() *cobra.Command {
	var o loginOpts
	c := &cobra.Command{
		Use:   "login --server URL (--token-file FILE | --token-stdin) [--context NAME] [--ca-file FILE]",
		Short: "Check the credentials against the server and save them as a context",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.name = lc.sess.context
			return lc.login(cmd, o)
		},
	}
	c.Flags().StringVar(&o.server, "server", "", "REST base URL, e.g. https://vcfsm.example.com:8080")
	c.Flags().StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token (read at every use)")
	c.Flags().BoolVar(&o.tokenStdin, "token-stdin", false, "read the bearer token from standard input (stored in the config)")
	c.Flags().StringVar(&o.caFile, "ca-file", "", "PEM CA bundle that verifies an https:// server")
	return c
}

func (lc loginCmds) login(cmd *cobra.Command, o loginOpts) error {
	if o.server == "" {
		return usageErr("--server is required")
	}
	if (o.tokenFile == "") == !o.tokenStdin {
		return usageErr("give exactly one of --token-file FILE and --token-stdin")
	}
	ctxEntry := config.Context{Server: strings.TrimSuffix(o.server, "/")}
	var token string
	if o.tokenStdin {
		line, _ := bufio.NewReader(lc.out.io.In).ReadString('\n') // a last line without newline is fine
		token = strings.TrimSpace(line)
		if token == "" {
			return errors.New("no token on standard input")
		}
		ctxEntry.Token = token
	} else {
		abs, err := filepath.Abs(o.tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		b, err := os.ReadFile(abs) //nolint:gosec // the user names the token file
		if err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return fmt.Errorf("--token-file %s is empty", o.tokenFile)
		}
		ctxEntry.TokenFile = abs
	}
	if o.caFile != "" {
		abs, err := filepath.Abs(o.caFile)
		if err != nil {
			return fmt.Errorf("--ca-file: %w", err)
		}
		ctxEntry.CAFile = abs
	}
	cl, err := api.New(ctxEntry.Server, token, ctxEntry.CAFile)
	if err != nil {
		return err
	}
	// The server must say it is a Service Manager before it gets the
	// token; then one cheap authenticated call proves CA and token.
	if err := cl.Identify(cmd.Context()); err != nil {
		return fmt.Errorf("login to %s failed: %w", ctxEntry.Server, err)
	}
	if _, err := cl.Do(cmd.Context(), http.MethodGet, "/v2/vcf-services?page=1&pageSize=1", nil); err != nil {
		if api.IsUnauthorized(err) {
			return fmt.Errorf("%s refused the token from %s: %s", ctxEntry.Server, tokenFrom(o), tokenHint.Replace(err.Error()))
		}
		return fmt.Errorf("login to %s failed: %w", ctxEntry.Server, err)
	}
	path, err := config.Path(lc.sess.env)
	if err != nil {
		return err
	}
	f, err := config.Load(path)
	if err != nil {
		return err
	}
	name := o.name
	if name == "" {
		name = config.DefaultName(ctxEntry.Server)
	}
	f.Contexts[name] = ctxEntry
	f.Current = name
	if err := f.Save(path); err != nil {
		return err
	}
	lc.out.printf("Logged in to %s as context %q (saved in %s)\n", ctxEntry.Server, name, path)
	return nil
}

func (lc loginCmds) contextCmd() *cobra.Command {
	c := group("context", "List and switch contexts")
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the contexts; * marks the current one",
		Args:  exactArgs(),
		RunE: func(_ *cobra.Command, _ []string) error {
			f, _, err := lc.sess.loadConfig()
			if err != nil {
				return err
			}
			t := newTable("CURRENT", "NAME", "SERVER", "TOKEN")
			for _, n := range f.Names() {
				cur, src := "", "stored"
				if n == f.Current {
					cur = "*"
				}
				if f.Contexts[n].TokenFile != "" {
					src = "file " + f.Contexts[n].TokenFile
				}
				t.row(cur, n, f.Contexts[n].Server, src)
			}
			t.write(lc.out.io.Out, lc.out.colour())
			return nil
		},
	}, &cobra.Command{
		Use:               "use NAME",
		Short:             "Make NAME the current context",
		Args:              exactArgs("NAME"),
		ValidArgsFunction: lc.sess.completeContexts,
		RunE: func(_ *cobra.Command, args []string) error {
			f, path, err := lc.sess.loadConfig()
			if err != nil {
				return err
			}
			if _, ok := f.Contexts[args[0]]; !ok {
				return fmt.Errorf("context %q does not exist (known: %s)", args[0], strings.Join(f.Names(), ", "))
			}
			f.Current = args[0]
			if err := f.Save(path); err != nil {
				return err
			}
			lc.out.printf("Switched to context %q\n", args[0])
			return nil
		},
	})
	return c
}

func (s *session) loadConfig() (*config.File, string, error) {
	path, err := config.Path(s.env)
	if err != nil {
		return nil, "", err
	}
	f, err := config.Load(path)
	return f, path, err
}

// tokenFrom names where login read the token.
func tokenFrom(o loginOpts) string {
	if o.tokenStdin {
		return "standard input (--token-stdin)"
	}
	return "--token-file " + o.tokenFile
}
