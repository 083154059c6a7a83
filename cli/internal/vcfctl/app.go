// Package vcfctl is the vcfctl command line: cobra commands over the REST
// /v2 surface, contexts, output formats, --wait and progress.
package vcfctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/vcfsm/vcfsm/cli/internal/api"
	"github.com/vcfsm/vcfsm/cli/internal/config"
	platformcli "github.com/vcfsm/vcfsm/platform/cli"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitError   = 1
	ExitUsage   = 2
	ExitBlocked = 3
	// ExitTimeout: --wait gave up after --timeout; the operation goes on.
	ExitTimeout = 4
)

// Version is set at build time (-ldflags "-X ...vcfctl.Version=...").
var Version = "dev"

// versionLine is what version and --version print: the version, the
// commit and the Go version, as every binary of the project answers.
func versionLine() string {
	v := Version
	if v == "dev" {
		v = ""
	}
	return platformcli.VersionOf("vcfctl", v)
}

// IO is where a command reads and writes; Out decides terminal features.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// App is one invocation: it only wires the command groups to what each
// uses. The groups share the session (the context, the connection and
// the SERVICE argument, for messages) and the printer (the streams).
type App struct {
	sess *session
	out  *printer
}

// session is the connection a command makes: the context chosen, what
// it resolved to and the SERVICE the command was given.
type session struct {
	env     config.Env
	context string // --context
	// conn is the context the command connects with; error messages name
	// it and where its token came from.
	conn config.Resolved
	// subject is the SERVICE argument as given, for hints in errors.
	subject string
}

// printer is where a command writes: standard output for results, the
// status stream for progress, standard error for problems.
type printer struct {
	io  IO
	env config.Env
	// tty is true when Out is a terminal (colours).
	tty bool
	// status is where progress and "accepted" lines go: Out, or Err when
	// Out carries a document for programs (-o json|yaml).
	status io.Writer
}

// exitError carries an exit code through cobra; printed errors have
// already been explained on standard error.
type exitError struct {
	code    int
	err     error
	printed bool
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, a...)}
}

var (
	// errBlocked is returned after the blocking details were printed.
	errBlocked  = &exitError{code: ExitBlocked, err: errors.New("blocked"), printed: true}
	errTimedOut = errors.New("timed out")
)

// Run executes vcfctl with args (without the program name) and returns
// the exit code.
func Run(ctx context.Context, args []string, streams IO, env config.Env) int {
	out := &printer{io: streams, env: env, status: streams.Out}
	if f, ok := streams.Out.(*os.File); ok {
		out.tty = term.IsTerminal(int(f.Fd())) //nolint:gosec // a file descriptor fits an int
	}
	a := &App{sess: &session{env: env}, out: out}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitError
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.printed {
			return code
		}
		err = ee.err
	case isUsage(err):
		code = ExitUsage
	}
	_, _ = fmt.Fprintln(streams.Err, "Error:", a.sess.describe(err))
	return code
}

// isUsage recognises cobra's own usage errors that bypass the flag error
// function (an unknown top-level command).
func isUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}

func (a *App) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "vcfctl",
		Short:         "Drive the VCF Service Manager: services, contexts, plans and progress",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: ExitUsage, err: err} })
	root.PersistentFlags().StringVar(&a.sess.context, "context", "", "context to use (default: VCFCTL_CONTEXT, then the current context)")
	_ = root.RegisterFlagCompletionFunc("context", func(cmd *cobra.Command, _ []string, s string) ([]string, cobra.ShellCompDirective) {
		return a.sess.completeContexts(cmd, nil, s)
	})
	follow := follower{out: a.out, sess: a.sess, poll: rolloutPoll}
	login := loginCmds{sess: a.sess, out: a.out}
	reads := serviceReads{sess: a.sess, out: a.out}
	changes := serviceChanges{sess: a.sess, out: a.out, follow: follow}
	platform := platformCmds{sess: a.sess, out: a.out}
	rollouts := rolloutCmds{sess: a.sess, out: a.out}
	version := platform.versionCmd()
	version.AddCommand(rollouts.quarantineCmd(), rollouts.clearCmd())
	service := group("service", "Create, inspect and operate VCF Services", "services", "svc")
	service.AddCommand(changes.createCmd(), reads.listCmd(), reads.getCmd(), reads.renderCmd(), changes.activateCmd(),
		changes.stateCmd("pause", "paused", "Pause the service (its resources stay, reconciliation stops)"),
		changes.stateCmd("resume", "active", "Resume a paused service"),
		changes.stateCmd("deactivate", "inactive", "Deactivate the service (its resources are removed)"),
		changes.planCmd(), changes.upgradeCmd(), changes.rollbackCmd(), changes.deleteCmd(), reads.watchCmd(), reads.historyCmd())
	root.AddCommand(login.loginCmd(), login.contextCmd(), service, rollouts.rolloutCmd(), platform.inventoryCmd(),
		platform.catalogCmd(), platform.supervisorCmd(), version, completionCmd(a.out, root))
	return root
}

// client connects with the resolved context.
func (s *session) client() (*api.Client, error) {
	path, err := config.Path(s.env)
	if err != nil {
		return nil, err
	}
	f, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	r, err := config.Resolve(f, s.context, s.env)
	if err != nil {
		return nil, err
	}
	s.conn = r
	return api.New(r.Server, r.Token, r.CAFile)
}

// exactArgs is cobra.ExactArgs with a usage exit code and the names.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErr("expected %d argument(s) (%s), got %d", len(names), strings.Join(names, ", "), len(args))
		}
		return nil
	}
}

func (p *printer) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(p.io.Out, format, args...)
}

// report prints a line about what happened (accepted, progress, the end
// of a wait): on standard output, or on standard error when standard
// output carries a document for programs.
func (p *printer) report(format string, args ...any) {
	_, _ = fmt.Fprintf(p.status, format, args...)
}

func (p *printer) errorf(format string, args ...any) {
	_, _ = fmt.Fprintf(p.io.Err, format, args...)
}

// group is a command that only holds subcommands: without one it prints
// its help; an unknown one is a usage error.
func group(use, short string, aliases ...string) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Aliases: aliases,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}
