package constraint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	version "github.com/hashicorp/go-version"
)

// MaxVersionLength bounds a version string the parsers are given.
const MaxVersionLength = 256

var errTooLong = fmt.Errorf("longer than %d characters", MaxVersionLength)

// ParseSupervisorVersion parses a Supervisor release version for Syntax B
// (any number of numeric segments, e.g. 9.0.0.0).
func ParseSupervisorVersion(s string) (*version.Version, error) {
	if len(s) > MaxVersionLength {
		return nil, errTooLong
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty version")
	}
	v, err := version.NewVersion(s)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ParseKubernetesVersion parses an environment's Kubernetes version for
// Syntax A, tolerantly: a leading "v", missing minor/patch segments and
// leading zeros are accepted, so "v1.30.2+vmware.1" and "1.30" parse. Build
// metadata (+vmware.1) does not take part in comparisons; a pre-release
// suffix does (v1.31.0-rc.1 is older than 1.31.0).
func ParseKubernetesVersion(s string) (semver.Version, error) {
	if len(s) > MaxVersionLength {
		return semver.Version{}, errTooLong
	}
	if strings.TrimSpace(s) == "" {
		return semver.Version{}, errors.New("empty version")
	}
	return semver.ParseTolerant(s)
}

// ParseServiceVersion parses a service (package) version for Syntax A. It
// is strict semver: a service version is what the vendor wrote in
// spec.version, and seed 000 wants a non-semver one reported, not guessed.
func ParseServiceVersion(s string) (semver.Version, error) {
	if len(s) > MaxVersionLength {
		return semver.Version{}, errTooLong
	}
	if s == "" {
		return semver.Version{}, errors.New("empty version")
	}
	return semver.Parse(s)
}
