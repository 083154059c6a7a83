package vcfctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// Output formats.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

// outputFlag adds -o with the allowed formats; the first is the default
// ("" for a command whose default output is not one of them).
func outputFlag(c *cobra.Command, dst *string, allowed ...string) {
	named := slices.DeleteFunc(slices.Clone(allowed), func(f string) bool { return f == "" })
	c.Flags().StringVarP(dst, "output", "o", allowed[0], "output format: "+strings.Join(named, "|"))
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(named, cobra.ShellCompDirectiveNoFileComp))
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		for _, f := range allowed {
			if *dst == f {
				if prev != nil {
					return prev(cmd, args)
				}
				return nil
			}
		}
		return usageErr("--output %q is not one of %s", *dst, strings.Join(named, ", "))
	}
}

// writeRaw prints the REST JSON verbatim (json) or converted to YAML.
func (p *printer) writeRaw(format string, raw []byte) error {
	switch format {
	case formatJSON:
		raw = bytes.TrimRight(raw, "\n")
		_, err := fmt.Fprintf(p.io.Out, "%s\n", raw)
		return err
	case formatYAML:
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return fmt.Errorf("convert the answer to YAML: %w", err)
		}
		_, err = p.io.Out.Write(y)
		return err
	}
	return fmt.Errorf("format %q has no raw form", format)
}

// colour tells whether tables are coloured: on a terminal, unless
// NO_COLOR is set (https://no-color.org) or TERM is dumb.
func (p *printer) colour() bool {
	return p.tty && p.env("NO_COLOR") == "" && p.env("TERM") != "dumb"
}

// table is an aligned text table whose status-like cells are coloured
// after padding, so escape codes never disturb the alignment.
type table struct {
	head []string
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head} }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer, colour bool) {
	widths := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	line := func(r []string, header bool) {
		var b strings.Builder
		for i, c := range r {
			cell := c
			if i < len(r)-1 {
				cell += strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2)
			}
			switch {
			case colour && header:
				cell = "\x1b[1m" + cell + "\x1b[0m"
			case colour:
				if code := statusColour(c); code != "" {
					cell = code + cell + "\x1b[0m"
				}
			}
			b.WriteString(cell)
		}
		_, _ = fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.head, true)
	for _, r := range t.rows {
		line(r, false)
	}
}

// statusColour maps statuses, outcomes, severities and plan actions to an
// ANSI colour.
func statusColour(s string) string {
	switch s {
	case "Healthy", "Succeeded", "Passed", "Ready", "INFO", "created", "active", "Done":
		return "\x1b[32m" // green
	case "Unhealthy", "Failed", "Stuck", "ERROR", "BLOCKED", "decommissioned", "Unavailable", "RollbackRefused", "Quarantined":
		return "\x1b[31m" // red
	case "Busy", "Maintenance", "Running", "WARN", "WARNING", "Warning", "reconfigured", "RolledBack", "Unresolved", "paused",
		"WaitingApproval", "WaitingForWindow", "RollingBack", "Moving", "Verifying", "Blocked", "Paused":
		return "\x1b[33m" // yellow
	}
	return ""
}

// shortTime prints an RFC 3339 time in a fixed width, UTC, to the second.
func shortTime(s string) string {
	if s == "" {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// prettyJSON indents a JSON document for people.
func prettyJSON(raw []byte) []byte {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return raw
	}
	b.WriteByte('\n')
	return b.Bytes()
}
