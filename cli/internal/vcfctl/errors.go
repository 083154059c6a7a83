package vcfctl

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// describe is vcfctl's one error printer: every error it shows passes
// here. The server's message comes without HTTP preambles, REST hints
// become the vcfctl command that does the same, a refused token names the
// context and where the token came from.
func (s *session) describe(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		switch ae.Status {
		case http.StatusUnauthorized:
			return s.unauthorized(ae)
		case http.StatusForbidden:
			return fmt.Sprintf("%s (context %s, %s)", s.inVcfctlWords(err.Error()), s.contextName(), s.conn.TokenSource)
		}
	}
	return s.inVcfctlWords(err.Error())
}

// unauthorized explains a 401: which context and token were refused and
// how to get a good one.
func (s *session) unauthorized(e *api.Error) string {
	return fmt.Sprintf("%s refused the token of context %s (%s): %s; log in again "+
		"('vcfctl login --server %s --token-file FILE'), or set VCFCTL_TOKEN",
		orDash(s.conn.Server), s.contextName(), s.conn.TokenSource, strings.TrimSuffix(tokenHint.Replace(e.Message), ":"), orDash(s.conn.Server))
}

// tokenHint drops the REST instruction of the gateway's 401 message.
var tokenHint = strings.NewReplacer(": send Authorization: Bearer <token>", "")

func (s *session) contextName() string {
	if s.conn.Name == "" {
		return "(none: VCFCTL_SERVER)"
	}
	return fmt.Sprintf("%q", s.conn.Name)
}

// restHints are REST phrases of the server's messages and the vcfctl
// words for them: {SERVICE} is the service the command was given,
// {EXISTING} the service a message names ("… as service <id> …").
var restHints = []struct{ rest, vcfctl string }{
	{"upgrade that service (PATCH source)", "upgrade that service ('vcfctl service upgrade {EXISTING} --source SOURCE')"},
	{"register this version with POST /v2/vcf-service-versions", "register this version with 'vcfctl catalog add SOURCE'"},
	{"recover with POST /rollback or DELETE ?forceDelete=true", "recover with 'vcfctl service rollback {SERVICE}' or 'vcfctl service delete {SERVICE} --force'"},
	{"downgrades go through POST /rollback", "downgrades go through 'vcfctl service rollback {SERVICE}'"},
	{"wait, or delete with forceDelete=true", "wait, or delete with 'vcfctl service delete {SERVICE} --force'"},
	{"DELETE with forceDelete=true skips cleanup", "'vcfctl service delete {SERVICE} --force' skips cleanup"},
	{"must equal POST /render-access-grants output verbatim", "must equal what 'vcfctl service render {SERVICE} grants' prints"},
	{"(GET /v2/inventory)", "('vcfctl inventory get')"},
	{"use DELETE /v2/vcf-services/{id}", "use 'vcfctl service delete {SERVICE}'"},
	{"POST /rollback", "'vcfctl service rollback {SERVICE}'"},
	{"(PUT /v2/rollout-strategies)", "('vcfctl rollout strategies set FILE')"},
}

// clearHint is the REST way out of a quarantine a refusal names.
var clearHint = regexp.MustCompile(`\(DELETE /v2/vcf-service-versions/([^/\s]+)/([^/\s]+)/quarantine, or vcfctl version clear\)`)

// inVcfctlWords rewrites the server's REST hints as vcfctl commands.
func (s *session) inVcfctlWords(msg string) string {
	subject := s.subject
	if subject == "" {
		subject = "SERVICE"
	}
	for _, h := range restHints {
		if !strings.Contains(msg, h.rest) {
			continue
		}
		other := "SERVICE"
		if i := strings.Index(msg, " as service "); i >= 0 {
			other, _, _ = strings.Cut(msg[i+len(" as service "):], " ")
		}
		words := strings.NewReplacer("{SERVICE}", subject, "{EXISTING}", other).Replace(h.vcfctl)
		msg = strings.ReplaceAll(msg, h.rest, words)
	}
	return clearHint.ReplaceAllString(msg, "('vcfctl version clear $1 $2')")
}
