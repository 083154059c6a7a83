package vcfctl

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

const completionHelp = `Print a shell completion script for bash, zsh or fish.

Completion offers commands and flags, service names (asked from the
server of the current context), context names, render kinds and output
formats.

bash, with the bash-completion package (Debian/Ubuntu: apt-get install
bash-completion; macOS: brew install bash-completion@2):
    vcfctl completion bash > ~/.local/share/bash-completion/completions/vcfctl
bash without it (the script brings what it needs):
    echo 'source <(vcfctl completion bash)' >> ~/.bashrc
zsh:
    echo 'autoload -U compinit && compinit' >> ~/.zshrc   # once, if not done yet
    vcfctl completion zsh > "${fpath[1]}/_vcfctl"
fish:
    vcfctl completion fish > ~/.config/fish/completions/vcfctl.fish

Open a new shell afterwards.`

// bashWithoutPackage lets cobra's bash script run where the
// bash-completion package is not installed: it defines the one function
// of the package the script calls, splitting the line on blanks only so
// urn:…:ids and host:port stay one word.
const bashWithoutPackage = `# vcfctl: without the bash-completion package, define the one function
# of it the script below calls.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    local line="${COMP_LINE:0:COMP_POINT}"
    words=()
    read -r -a words <<< "$line"
    if [[ -z "$line" || "$line" == *[[:space:]] ]]; then
        words+=("")
    fi
    cword=$(( ${#words[@]} - 1 ))
    cur="${words[cword]}"
    prev=""
    if (( cword > 0 )); then
        prev="${words[cword-1]}"
    fi
}
fi

`

func completionCmd(out *printer, root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:       "completion bash|zsh|fish",
		Short:     "Print a shell completion script (see --help for how to install it)",
		Long:      completionHelp,
		Args:      exactArgs("SHELL"),
		ValidArgs: []string{"bash", "zsh", "fish"},
		RunE: func(_ *cobra.Command, args []string) error {
			switch args[0] {
			case "bash":
				var b bytes.Buffer
				if err := root.GenBashCompletionV2(&b, true); err != nil {
					return err
				}
				out.printf("%s%s", bashWithoutPackage, b.String())
				return nil
			case "zsh":
				return root.GenZshCompletion(out.io.Out)
			case "fish":
				return root.GenFishCompletion(out.io.Out, true)
			}
			return usageErr("completion %q: choose bash, zsh or fish", args[0])
		},
	}
}

// completeServices offers the names of the services on the server of
// the current context, for a command's SERVICE argument.
func (s *session) completeServices(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return s.serviceNames(cmd.Context(), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeRender offers a service, then what to render.
func (s *session) completeRender(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return s.serviceNames(cmd.Context(), toComplete), cobra.ShellCompDirectiveNoFileComp
	case 1:
		return []string{"values", "resources", "grants", "provenance"}, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// serviceNames asks the server for the names starting with prefix (one
// page of the list); a server that does not answer offers nothing.
func (s *session) serviceNames(ctx context.Context, prefix string) []string {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, err := s.client()
	if err != nil {
		return nil
	}
	q := url.Values{"page": {"1"}, "pageSize": {"128"}, "sortAsc": {"name"}}
	if prefix != "" && !strings.ContainsAny(prefix, "*;,()'\"") {
		q.Set("filter", "name=="+prefix+"*")
	}
	raw, err := cl.Do(ctx, http.MethodGet, "/v2/vcf-services?"+q.Encode(), nil)
	if err != nil {
		return nil
	}
	var list lifecyclev1.ListServicesResponse
	if decode(raw, &list) != nil {
		return nil
	}
	names := make([]string, 0, len(list.GetValues()))
	for _, svc := range list.GetValues() {
		if svc.GetName() != "" && strings.HasPrefix(svc.GetName(), prefix) {
			names = append(names, svc.GetName())
		}
	}
	return names
}

// completeContexts offers the context names of the config file.
func (s *session) completeContexts(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	f, _, err := s.loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return f.Names(), cobra.ShellCompDirectiveNoFileComp
}
