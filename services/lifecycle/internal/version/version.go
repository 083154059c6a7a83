// Package version is the one ordering of versions in the lifecycle service:
// catalog entries, upgrade targets, rollback checks, Supervisor and
// Kubernetes versions, the list filter's `version` field and the Kubernetes
// driver's SupervisorService downgrade check all compare through Compare.
package version

import (
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
)

// Compare orders two versions: -1, 0 or 1. Semantic versions (a leading
// "v" and missing minor/patch tolerated) follow semver.org's precedence,
// pre-releases included (1.0.0-alpha.2 < 1.0.0-alpha.10 < 1.0.0); build
// metadata is ignored. Versions that are not semantic (four-segment
// product versions such as 9.0.0.1) compare numerically segment by
// segment, and anything else as text.
func Compare(a, b string) int {
	va, errA := semver.ParseTolerant(a)
	vb, errB := semver.ParseTolerant(b)
	if errA == nil && errB == nil {
		return va.Compare(vb)
	}
	return compareSegments(a, b)
}

// IsSemver reports a strict semantic version (what upgrade-path planning
// accepts).
func IsSemver(v string) bool {
	_, err := semver.Parse(v)
	return err == nil
}

// IsPrerelease reports a semantic version with a pre-release part
// (1.2.0-rc.1); versions that are not semantic are releases.
func IsPrerelease(v string) bool {
	sv, err := semver.ParseTolerant(v)
	return err == nil && len(sv.Pre) > 0
}

// compareSegments orders dotted numeric versions segment by segment,
// falling back to text when a segment is not a number.
func compareSegments(a, b string) int {
	ca, _, _ := strings.Cut(strings.TrimPrefix(a, "v"), "+")
	cb, _, _ := strings.Cut(strings.TrimPrefix(b, "v"), "+")
	ca, preA, _ := strings.Cut(ca, "-")
	cb, preB, _ := strings.Cut(cb, "-")
	pa, pb := strings.Split(ca, "."), strings.Split(cb, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		var ex, ey error
		if i < len(pa) {
			x, ex = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, ey = strconv.Atoi(pb[i])
		}
		if ex != nil || ey != nil {
			return strings.Compare(a, b)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case preA == preB:
		return 0
	case preA == "":
		return 1
	case preB == "":
		return -1
	}
	return strings.Compare(preA, preB)
}
