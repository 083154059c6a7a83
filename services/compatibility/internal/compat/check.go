package compat

import (
	"github.com/blang/semver/v4"
	version "github.com/hashicorp/go-version"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

// Check is one parsed constraint against one parsed version: the unit of
// work on the hot path. Every evaluation of this package runs through
// Check.Append, and the in-process benchmark measures exactly that.
type Check struct {
	Kind       Kind
	Constraint *constraint.Constraint
	// Semver is the checked version of a Syntax A kind, Version that of
	// Syntax B (the Supervisor version); the other one is nil.
	Semver  *semver.Version
	Version *version.Version
	// CheckedVersion is the checked version as the caller wrote it.
	CheckedVersion string
	Subject        string
	// Package and PackageVersion own the constraint.
	Package        string
	PackageVersion string
}

// Passes reports whether the checked version satisfies the constraint.
func (c *Check) Passes() bool {
	if c.Version != nil {
		return c.Constraint.AllowsVersion(c.Version)
	}
	return c.Constraint.AllowsSemver(c.Semver)
}

// Append adds the ERROR result of a check that does not pass to results,
// and returns results unchanged when it passes. Nothing is allocated for a
// passing check.
func (c *Check) Append(results []Result) []Result {
	if c.Passes() {
		return results
	}
	return append(results, Result{
		Severity:       SeverityError,
		Kind:           c.Kind,
		Expression:     c.Constraint.Expression(),
		CheckedVersion: c.CheckedVersion,
		Subject:        c.Subject,
		Source:         c.Kind.Source(),
		Package:        c.Package,
		Version:        c.PackageVersion,
		reason:         reasonUnsatisfied,
	})
}
