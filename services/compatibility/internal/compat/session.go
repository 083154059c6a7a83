package compat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	version "github.com/hashicorp/go-version"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

// maxReportedErrors bounds how many invalid inputs one error lists: a
// batch of 100,000 items sharing one bad expression should not produce a
// 100,000-line message.
const maxReportedErrors = 20

// Session evaluates the parts of one request. It memoises parsed
// constraints and versions for the request (a batch repeats the same few
// expressions and Supervisor versions thousands of times) on top of the
// evaluator's shared constraint cache, and collects every invalid input so
// a request is rejected once, with all its problems listed. A Session is
// not safe for concurrent use.
type Session struct {
	cache       *constraint.Cache
	constraints map[constraintKey]parsedConstraint
	supervisor  map[string]*parsedVersion
	kubernetes  map[string]*parsedSemver
	service     map[string]*parsedSemver
	errs        []error
	errCount    int
}

type constraintKey struct {
	syntax constraint.Syntax
	expr   string
}

type parsedConstraint struct {
	c   *constraint.Constraint
	err error
}

type parsedVersion struct {
	v   *version.Version
	err error
}

type parsedSemver struct {
	v   semver.Version
	err error
}

func newSession(cache *constraint.Cache) *Session {
	return &Session{
		cache:       cache,
		constraints: make(map[constraintKey]parsedConstraint),
		supervisor:  make(map[string]*parsedVersion),
		kubernetes:  make(map[string]*parsedSemver),
		service:     make(map[string]*parsedSemver),
	}
}

// Err returns every invalid input met so far (wrapping ErrInvalidRequest,
// and constraint.ErrInvalid for bad expressions), or nil.
func (s *Session) Err() error {
	if s.errCount == 0 {
		return nil
	}
	errs := s.errs
	if more := s.errCount - len(s.errs); more > 0 {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("… and %d more invalid inputs", more))
	}
	return errors.Join(errs...)
}

func (s *Session) fail(err error) {
	s.errCount++
	if len(s.errs) < maxReportedErrors {
		s.errs = append(s.errs, err)
	}
}

// Compiled is a package version with its constraints parsed. A nil
// constraint is an empty one, or an invalid one already reported.
type Compiled struct {
	Package *PackageVersion
	sup     *constraint.Constraint
	k8s     *constraint.Constraint
	src     *constraint.Constraint
	dst     *constraint.Constraint
}

// Compile validates a package version of the request at path at and parses
// its constraints; problems are collected for Err.
func (s *Session) Compile(pkg *PackageVersion, at Path) *Compiled {
	if strings.TrimSpace(pkg.Name) == "" {
		s.fail(fmt.Errorf("%w: %s.name is empty: it names the service in every result", ErrInvalidRequest, at))
	}
	return &Compiled{
		Package: pkg,
		sup:     s.constraint(KindSupervisorVersion, pkg.Constraints.SupervisorVersion, at),
		k8s:     s.constraint(KindKubernetesVersion, pkg.Constraints.KubernetesVersion, at),
		src:     s.constraint(KindSourceUpgrade, pkg.Constraints.SourceUpgrade, at),
		dst:     s.constraint(KindDestinationUpgrade, pkg.Constraints.DestinationUpgrade, at),
	}
}

func (s *Session) constraint(kind Kind, expr string, at Path) *constraint.Constraint {
	if expr == "" {
		return nil
	}
	key := constraintKey{syntax: kind.Syntax(), expr: expr}
	p, seen := s.constraints[key]
	if !seen {
		p.c, p.err = s.cache.Parse(key.syntax, expr)
		s.constraints[key] = p
	}
	if p.err != nil {
		s.fail(fmt.Errorf("%s.constraints.%s (%s): %w", at, kind.field(), kind.Source(), p.err))
		return nil
	}
	c := p.c
	if c.IsEmpty() {
		return nil
	}
	return c
}

// CheckEnvironment validates an environment of the request at path at.
func (s *Session) CheckEnvironment(env *Environment, at Path) {
	if strings.TrimSpace(env.Supervisor) == "" {
		s.fail(fmt.Errorf("%w: %s.supervisor is empty: it names the Supervisor in every result", ErrInvalidRequest, at))
	}
}

func (s *Session) supervisorVersion(raw string) *parsedVersion {
	p, ok := s.supervisor[raw]
	if !ok {
		v, err := constraint.ParseSupervisorVersion(raw)
		p = &parsedVersion{v: v, err: err}
		s.supervisor[raw] = p
	}
	return p
}

func (s *Session) kubernetesVersion(raw string) *parsedSemver {
	p, ok := s.kubernetes[raw]
	if !ok {
		v, err := constraint.ParseKubernetesVersion(raw)
		p = &parsedSemver{v: v, err: err}
		s.kubernetes[raw] = p
	}
	return p
}

func (s *Session) serviceVersion(raw string) *parsedSemver {
	p, ok := s.service[raw]
	if !ok {
		v, err := constraint.ParseServiceVersion(raw)
		p = &parsedSemver{v: v, err: err}
		s.service[raw] = p
	}
	return p
}

// Install evaluates a package's Supervisor and Kubernetes constraints on
// every environment.
func (s *Session) Install(pkg *Compiled, envs []Environment) Verdict {
	var v Verdict
	if pkg.Package.BuiltIn {
		v.add(builtIn(pkg.Package))
		return v
	}
	for i := range envs {
		s.environmentChecks(&v, pkg, &envs[i])
	}
	v.settle()
	return v
}

// Upgrade evaluates an upgrade from installed to target: the target's
// source constraint against the installed version, the installed package's
// destination constraint against the target version, and the target's
// Supervisor and Kubernetes constraints on every environment.
func (s *Session) Upgrade(installed, target *Compiled, envs []Environment) Verdict {
	var v Verdict
	if target.Package.BuiltIn {
		v.add(builtIn(target.Package))
		return v
	}
	if target.src != nil {
		s.serviceCheck(&v, KindSourceUpgrade, target.src, installed.Package.Version, target.Package)
	}
	if installed.dst != nil {
		s.serviceCheck(&v, KindDestinationUpgrade, installed.dst, target.Package.Version, installed.Package)
	}
	for i := range envs {
		s.environmentChecks(&v, target, &envs[i])
	}
	v.settle()
	return v
}

// serviceCheck checks an upgrade constraint of owner against a service
// version, which must be strict semver.
func (s *Session) serviceCheck(v *Verdict, kind Kind, c *constraint.Constraint, checked string, owner *PackageVersion) {
	p := s.serviceVersion(checked)
	if p.err != nil {
		v.add(Result{
			Severity: SeverityError, Kind: kind, Expression: c.Expression(), CheckedVersion: checked,
			Subject: owner.Name, Source: kind.Source(), Package: owner.Name, Version: owner.Version,
			reason: reasonServiceVersionNotSemver, detail: p.err.Error(),
		})
		return
	}
	chk := Check{
		Kind: kind, Constraint: c, Semver: &p.v, CheckedVersion: checked,
		Subject: owner.Name, Package: owner.Name, PackageVersion: owner.Version,
	}
	v.Results = chk.Append(v.Results)
}

// environmentChecks checks pkg's Supervisor and Kubernetes constraints
// against one environment.
func (s *Session) environmentChecks(v *Verdict, pkg *Compiled, env *Environment) {
	if pkg.sup != nil {
		if strings.TrimSpace(env.SupervisorVersion) == "" {
			v.add(environmentNote(KindSupervisorVersion, pkg, env, "", reasonEnvironmentVersionMissing, ""))
		} else if p := s.supervisorVersion(env.SupervisorVersion); p.err != nil {
			v.add(environmentNote(KindSupervisorVersion, pkg, env, env.SupervisorVersion, reasonEnvironmentVersionInvalid, p.err.Error()))
		} else {
			chk := Check{
				Kind: KindSupervisorVersion, Constraint: pkg.sup, Version: p.v, CheckedVersion: env.SupervisorVersion,
				Subject: env.Supervisor, Package: pkg.Package.Name, PackageVersion: pkg.Package.Version,
			}
			v.Results = chk.Append(v.Results)
		}
	}
	if pkg.k8s != nil {
		if strings.TrimSpace(env.KubernetesVersion) == "" {
			v.add(environmentNote(KindKubernetesVersion, pkg, env, "", reasonEnvironmentVersionMissing, ""))
		} else if p := s.kubernetesVersion(env.KubernetesVersion); p.err != nil {
			v.add(environmentNote(KindKubernetesVersion, pkg, env, env.KubernetesVersion, reasonEnvironmentVersionInvalid, p.err.Error()))
		} else {
			chk := Check{
				Kind: KindKubernetesVersion, Constraint: pkg.k8s, Semver: &p.v, CheckedVersion: env.KubernetesVersion,
				Subject: env.Supervisor, Package: pkg.Package.Name, PackageVersion: pkg.Package.Version,
			}
			v.Results = chk.Append(v.Results)
		}
	}
}

func environmentNote(kind Kind, pkg *Compiled, env *Environment, checked string, why reason, detail string) Result {
	c := pkg.sup
	if kind == KindKubernetesVersion {
		c = pkg.k8s
	}
	severity := SeverityError
	if why == reasonEnvironmentVersionMissing {
		severity = SeverityWarning
	}
	return Result{
		Severity: severity, Kind: kind, Expression: c.Expression(), CheckedVersion: checked,
		Subject: env.Supervisor, Source: kind.Source(), Package: pkg.Package.Name, Version: pkg.Package.Version,
		reason: why, detail: detail,
	}
}

func builtIn(pkg *PackageVersion) Result {
	return Result{
		Severity: SeverityInfo, Kind: KindStatic, CheckedVersion: pkg.Version,
		Subject: pkg.Name, Package: pkg.Name, Version: pkg.Version, reason: reasonBuiltIn,
	}
}
