package compat

import "fmt"

// reason selects the message template of a result.
type reason uint8

const (
	// reasonUnsatisfied: the checked version does not satisfy the constraint.
	reasonUnsatisfied reason = iota
	// reasonServiceVersionNotSemver: a Syntax A upgrade constraint applies
	// but the service version it must be checked against is not semver.
	reasonServiceVersionNotSemver
	// reasonEnvironmentVersionInvalid: the Supervisor or Kubernetes version
	// of the environment does not parse.
	reasonEnvironmentVersionInvalid
	// reasonEnvironmentVersionMissing: the environment does not say its
	// version, so the constraint could not be verified.
	reasonEnvironmentVersionMissing
	// reasonBuiltIn: built-in services are compatible by default.
	reasonBuiltIn
)

// Result is one check that did not pass, or a note. The fields are those
// of common.v1.CheckResult; the message is rendered by Message.
type Result struct {
	Severity Severity
	Kind     Kind
	// Expression is the constraint that was evaluated.
	Expression string
	// CheckedVersion is the version the expression was evaluated against,
	// as the caller gave it.
	CheckedVersion string
	// Subject is the Supervisor for environment checks, the package name
	// for upgrade checks and notes.
	Subject string
	// Source is the annotation or field the expression came from.
	Source string
	// Package and Version are the package version the constraint belongs
	// to (the target for SOURCE_UPGRADE, the installed one for
	// DESTINATION_UPGRADE).
	Package string
	Version string

	reason reason
	// detail is a parser's explanation, for the invalid-version reasons.
	detail string
}

// Message renders the text an administrator acts on. It names the
// constraint, the expression, the version checked and the subject.
func (r *Result) Message() string {
	pkg := r.Package + " " + r.Version
	switch r.reason {
	case reasonBuiltIn:
		return fmt.Sprintf("%s is a built-in service: built-in services are compatible by default "+
			"(validated through the VCF Automation release pipeline), so its version constraints were not evaluated", pkg)
	case reasonEnvironmentVersionMissing:
		what := "Supervisor version"
		fix := "set the Supervisor's version in the inventory"
		if r.Kind == KindKubernetesVersion {
			what, fix = "Kubernetes version", "set the Supervisor's kubernetesVersion in the inventory"
		}
		return fmt.Sprintf("%s reports no %s, so the requirement of %s %s %s (%s) was not verified; %s to have it checked",
			r.Subject, what, pkg, constraintNoun(r.Kind), r.Expression, r.Source, fix)
	case reasonEnvironmentVersionInvalid:
		what, fix := "Supervisor version", "correct the Supervisor's version in the inventory"
		if r.Kind == KindKubernetesVersion {
			what, fix = "Kubernetes version", "correct the Supervisor's kubernetesVersion in the inventory"
		}
		return fmt.Sprintf("%s reports %s %q, which is not a version (%s), so the requirement of %s %s %s (%s) cannot be checked; %s",
			r.Subject, what, r.CheckedVersion, r.detail, pkg, constraintNoun(r.Kind), r.Expression, r.Source, fix)
	case reasonServiceVersionNotSemver:
		role := "installed"
		if r.Kind == KindDestinationUpgrade {
			role = "target"
		}
		return fmt.Sprintf("the %s version %q of %s is not valid semver (%s), so the %s constraint %s (%s on %s) cannot be evaluated; "+
			"Syntax A constraints need MAJOR.MINOR.PATCH versions such as 1.2.3",
			role, r.CheckedVersion, r.Package, r.detail, kindNoun(r.Kind), r.Expression, r.Source, pkg)
	}
	switch r.Kind {
	case KindSupervisorVersion:
		return fmt.Sprintf("%s requires Supervisor %s (%s); %s is %s. Run it on a Supervisor that satisfies %s, or choose a version of %s that supports %s",
			pkg, r.Expression, r.Source, r.Subject, r.CheckedVersion, r.Expression, r.Package, r.CheckedVersion)
	case KindKubernetesVersion:
		return fmt.Sprintf("%s requires Kubernetes %s (%s); %s runs Kubernetes %s. Run it on a Supervisor whose Kubernetes satisfies %s, or choose a version of %s that supports %s",
			pkg, r.Expression, r.Source, r.Subject, r.CheckedVersion, r.Expression, r.Package, r.CheckedVersion)
	case KindSourceUpgrade:
		return fmt.Sprintf("%s can only be installed as an upgrade from versions %s (%s on %s); the installed version is %s. Upgrade through an intermediate version first",
			pkg, r.Expression, r.Source, pkg, r.CheckedVersion)
	case KindDestinationUpgrade:
		return fmt.Sprintf("installed %s only allows upgrades to versions %s (%s on %s); the target version %s is not one of them. Upgrade to an allowed version first",
			pkg, r.Expression, r.Source, pkg, r.CheckedVersion)
	}
	return fmt.Sprintf("%s: %s %s not satisfied by %s", pkg, r.Kind, r.Expression, r.CheckedVersion)
}

func constraintNoun(k Kind) string {
	if k == KindKubernetesVersion {
		return "Kubernetes"
	}
	return "Supervisor"
}

func kindNoun(k Kind) string {
	if k == KindDestinationUpgrade {
		return "destination-upgrade"
	}
	return "source-upgrade"
}
