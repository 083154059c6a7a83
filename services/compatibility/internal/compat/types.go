// Package compat evaluates a package's version constraints (seed 000) for a
// service installation, a service upgrade and a Supervisor upgrade.
//
// Results name what did not pass; a passing check produces no result, so
// an empty result list means compatible. Messages are rendered on demand
// (Result.Message) so the evaluation itself stays allocation-light.
package compat

import (
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

// ErrInvalidRequest marks a request the evaluator cannot work on (missing
// names, invalid constraint expressions, too many items). The message says
// what is wrong and where.
var ErrInvalidRequest = errors.New("invalid compatibility request")

// Severity is the seed 000 severity of a result.
type Severity string

// The three severities; only ERROR blocks.
const (
	SeverityError   Severity = "ERROR"
	SeverityWarning Severity = "WARNING"
	SeverityInfo    Severity = "INFO"
)

// Kind says what a result is about.
type Kind string

// The kinds of CheckResult this service produces.
const (
	KindSupervisorVersion  Kind = "SUPERVISOR_VERSION"
	KindKubernetesVersion  Kind = "KUBERNETES_VERSION"
	KindSourceUpgrade      Kind = "SOURCE_UPGRADE"
	KindDestinationUpgrade Kind = "DESTINATION_UPGRADE"
	KindStatic             Kind = "STATIC"
)

// Where each constraint is declared in a package (seed 000 "Constraint
// Types").
const (
	SourceSupervisorVersion  = "appplatform.vmware.com/supervisor-version-constraints"
	SourceKubernetesVersion  = "spec.kubernetesVersionSelection.constraints"
	SourceSourceUpgrade      = "appplatform.vmware.com/source-version-upgrade-constraints"
	SourceDestinationUpgrade = "appplatform.vmware.com/destination-version-upgrade-constraints"
)

// ConstraintKinds are the four constraint kinds, in the order results and
// validation issues list them.
var ConstraintKinds = []Kind{KindSupervisorVersion, KindKubernetesVersion, KindSourceUpgrade, KindDestinationUpgrade}

// Syntax is the grammar of the kind's expressions.
func (k Kind) Syntax() constraint.Syntax {
	if k == KindSupervisorVersion {
		return constraint.SyntaxB
	}
	return constraint.SyntaxA
}

// Source is the annotation or field a kind's expression comes from.
func (k Kind) Source() string {
	switch k {
	case KindSupervisorVersion:
		return SourceSupervisorVersion
	case KindKubernetesVersion:
		return SourceKubernetesVersion
	case KindSourceUpgrade:
		return SourceSourceUpgrade
	case KindDestinationUpgrade:
		return SourceDestinationUpgrade
	}
	return ""
}

// field is the request field (proto name) of a kind's expression.
func (k Kind) field() string {
	switch k {
	case KindSupervisorVersion:
		return "supervisor_version"
	case KindKubernetesVersion:
		return "kubernetes_version"
	case KindSourceUpgrade:
		return "source_upgrade"
	case KindDestinationUpgrade:
		return "destination_upgrade"
	}
	return string(k)
}

// Constraints are a package's four expressions; empty means always
// compatible.
type Constraints struct {
	SupervisorVersion  string
	KubernetesVersion  string
	SourceUpgrade      string
	DestinationUpgrade string
}

// Get returns the expression of a kind.
func (c *Constraints) Get(k Kind) string {
	switch k {
	case KindSupervisorVersion:
		return c.SupervisorVersion
	case KindKubernetesVersion:
		return c.KubernetesVersion
	case KindSourceUpgrade:
		return c.SourceUpgrade
	case KindDestinationUpgrade:
		return c.DestinationUpgrade
	}
	return ""
}

// PackageVersion is one version of a service and its constraints.
type PackageVersion struct {
	Name        string
	Version     string
	Constraints Constraints
	// BuiltIn services are compatible by default (packaging-and-build.md).
	BuiltIn bool
}

// Environment is a Supervisor a package is evaluated against.
type Environment struct {
	Supervisor        string
	SupervisorVersion string
	KubernetesVersion string
}

// Verdict is the outcome of one evaluation.
type Verdict struct {
	// Blocked is true when any result is an ERROR.
	Blocked bool
	Results []Result
}

func (v *Verdict) add(r Result) { v.Results = append(v.Results, r) }

func (v *Verdict) settle() {
	v.Blocked = false
	for i := range v.Results {
		if v.Results[i].Severity == SeverityError {
			v.Blocked = true
			return
		}
	}
}

// Path names where in a request a value came from. It is formatted only
// when something is wrong, so the happy path never pays for it.
type Path struct {
	// List is a repeated request field ("items"), empty for a singular one.
	List  string
	Index int
	// Field follows the list index ("package"), or stands alone.
	Field string
}

// At is the path of a singular request field.
func At(field string) Path { return Path{Field: field} }

// Item is the path of element i of a repeated field, optionally followed
// by a field of that element.
func Item(list string, i int, field string) Path { return Path{List: list, Index: i, Field: field} }

func (p Path) String() string {
	switch {
	case p.List == "":
		return p.Field
	case p.Field == "":
		return fmt.Sprintf("%s[%d]", p.List, p.Index)
	default:
		return fmt.Sprintf("%s[%d].%s", p.List, p.Index, p.Field)
	}
}
