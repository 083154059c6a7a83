package server

import (
	"fmt"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/pkgdoc"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/upgradepath"
)

// missing is the error of a required message field left unset.
func missing(path string) error {
	return fmt.Errorf("%w: %s is required", compat.ErrInvalidRequest, path)
}

func toPackage(p *compatibilityv1.PackageVersion) compat.PackageVersion {
	c := p.GetConstraints()
	return compat.PackageVersion{
		Name:    p.GetName(),
		Version: p.GetVersion(),
		BuiltIn: p.GetBuiltIn(),
		Constraints: compat.Constraints{
			SupervisorVersion:  c.GetSupervisorVersion(),
			KubernetesVersion:  c.GetKubernetesVersion(),
			SourceUpgrade:      c.GetSourceUpgrade(),
			DestinationUpgrade: c.GetDestinationUpgrade(),
		},
	}
}

func toPackages(ps []*compatibilityv1.PackageVersion) []compat.PackageVersion {
	out := make([]compat.PackageVersion, len(ps))
	for i, p := range ps {
		out[i] = toPackage(p)
	}
	return out
}

func fromPackage(p compat.PackageVersion) *compatibilityv1.PackageVersion {
	return &compatibilityv1.PackageVersion{
		Name:    p.Name,
		Version: p.Version,
		BuiltIn: p.BuiltIn,
		Constraints: &compatibilityv1.Constraints{
			SupervisorVersion:  p.Constraints.SupervisorVersion,
			KubernetesVersion:  p.Constraints.KubernetesVersion,
			SourceUpgrade:      p.Constraints.SourceUpgrade,
			DestinationUpgrade: p.Constraints.DestinationUpgrade,
		},
	}
}

func toEnvironment(e *compatibilityv1.Environment) compat.Environment {
	return compat.Environment{
		Supervisor:        e.GetSupervisor(),
		SupervisorVersion: e.GetSupervisorVersion(),
		KubernetesVersion: e.GetKubernetesVersion(),
	}
}

func toEnvironments(es []*compatibilityv1.Environment) []compat.Environment {
	out := make([]compat.Environment, len(es))
	for i, e := range es {
		out[i] = toEnvironment(e)
	}
	return out
}

func fromResults(rs []compat.Result) []*commonv1.CheckResult {
	if len(rs) == 0 {
		return nil
	}
	out := make([]*commonv1.CheckResult, len(rs))
	for i := range rs {
		r := &rs[i]
		out[i] = &commonv1.CheckResult{
			Severity:       string(r.Severity),
			Kind:           string(r.Kind),
			Expression:     r.Expression,
			CheckedVersion: r.CheckedVersion,
			Subject:        r.Subject,
			Message:        r.Message(),
			Source:         r.Source,
		}
	}
	return out
}

func fromHops(hs []upgradepath.Hop) []*compatibilityv1.HopExplanation {
	if len(hs) == 0 {
		return nil
	}
	out := make([]*compatibilityv1.HopExplanation, len(hs))
	for i, h := range hs {
		out[i] = &compatibilityv1.HopExplanation{FromVersion: h.From, ToVersion: h.To, Results: fromResults(h.Results)}
	}
	return out
}

func toResources(rs []*commonv1.Resource) []pkgdoc.Resource {
	out := make([]pkgdoc.Resource, len(rs))
	for i, r := range rs {
		out[i] = pkgdoc.Resource{APIVersion: r.GetApiVersion(), Kind: r.GetKind(), Name: r.GetName()}
	}
	return out
}

func fromIssues(is []pkgdoc.Issue) []*compatibilityv1.ValidationIssue {
	if len(is) == 0 {
		return nil
	}
	out := make([]*compatibilityv1.ValidationIssue, len(is))
	for i, is := range is {
		out[i] = &compatibilityv1.ValidationIssue{Kind: is.Kind, Source: is.Source, Expression: is.Expression, Message: is.Message}
	}
	return out
}
