package steps

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// CheckTargetBundle refuses a bundle that is not a newer version of svc
// (an upgrade and its plan both ask); it returns the bundle's version.
func CheckTargetBundle(svc *lifecycle.Service, b *bundle.Bundle) (string, error) {
	if b.Package.RefName != "" && b.Package.RefName != svc.Name {
		return "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the new bundle is %q, not a version of %q", b.Package.RefName, svc.Name))
	}
	v := b.Package.Version
	if v == "" {
		return "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the new bundle's package.yml has no spec.version"))
	}
	if err := CheckTargetVersion(svc, v); err != nil {
		return "", lifecycle.Blocked(lifecycle.ErrTypeDownload, err)
	}
	return v, nil
}

// CheckTargetVersion refuses an upgrade to the installed version or an
// older one.
func CheckTargetVersion(svc *lifecycle.Service, v string) error {
	if v == svc.Version {
		return fmt.Errorf("version %s is already installed", v)
	}
	if version.Compare(v, svc.Version) < 0 {
		return fmt.Errorf("version %s is older than the installed %s: downgrades go through POST /rollback", v, svc.Version)
	}
	return nil
}

// UpgradeCandidates are the registered versions (a name's catalog
// entries) an upgrade of svc may be asked to pick, newest first: Ready,
// downloaded, newer than the installed version, not quarantined, and not a
// pre-release unless the service opts in (autoUpgradePrereleases).
func UpgradeCandidates(entries []*lifecycle.CatalogEntry, svc *lifecycle.Service) []*lifecycle.CatalogEntry {
	var out []*lifecycle.CatalogEntry
	for _, e := range entries {
		if e.Status != lifecycle.StatusReady || e.Digest == "" || e.Quarantine != nil || version.Compare(e.Version, svc.Version) <= 0 {
			continue
		}
		if version.IsPrerelease(e.Version) && !svc.AutoUpgradePrereleases {
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return version.Compare(out[i].Version, out[j].Version) > 0 })
	return out
}

// CatalogConstraints are what a catalog entry records of its bundle for
// path planning (so planning reads no bundle).
func CatalogConstraints(b *bundle.Bundle) *lifecycle.Constraints {
	c := PackageVersion(b, "", false).Constraints
	return &c
}

// SupervisorVerdict is the verdict on a Supervisor upgrade for every
// service with resources on it.
type SupervisorVerdict struct {
	Supervisor    string
	TargetVersion string
	Blocked       bool
	Services      []ServiceVerdict
}

// ServiceVerdict is one installed service's verdict.
type ServiceVerdict struct {
	ID, Name, Version string
	Blocked           bool
	Results           []lifecycle.CheckResult
}

// EvaluateSupervisor runs the compatibility service over the services
// with resources on a Supervisor, as if it ran version (Kubernetes k8s).
func EvaluateSupervisor(ctx context.Context, repo lifecycle.Repository, bundles lifecycle.Bundles, compat lifecycle.Compatibility, supervisor, version, k8s string) (*SupervisorVerdict, error) {
	chk := &SupervisorVerdict{Supervisor: supervisor, TargetVersion: version}
	var pkgs []lifecycle.PackageVersion
	var svcs []*lifecycle.Service
	for _, svc := range repo.Services(ctx) {
		if svc.Digest == "" || svc.LifecycleState == lifecycle.StateDecommissioned || svc.LifecycleState == lifecycle.StateInactive && svc.Status != lifecycle.StatusHealthy {
			continue
		}
		res, err := repo.Resources(ctx, svc.ID)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(InstalledSupervisors(svc, res), supervisor) {
			continue
		}
		b, err := bundles.Load(svc.Digest)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, PackageVersion(b, svc.Version, svc.BuiltIn))
		svcs = append(svcs, svc)
	}
	if len(pkgs) == 0 {
		return chk, nil
	}
	verdicts, err := compat.EvaluateSupervisorUpgrade(ctx, lifecycle.Environment{Supervisor: supervisor, SupervisorVersion: version, KubernetesVersion: k8s}, pkgs)
	if err != nil {
		return nil, err
	}
	for i, ev := range verdicts {
		if i >= len(svcs) {
			break
		}
		v := ServiceVerdict{ID: svcs[i].ID, Name: svcs[i].Name, Version: svcs[i].Version, Blocked: ev.Blocked, Results: ev.Results}
		chk.Blocked = chk.Blocked || v.Blocked
		chk.Services = append(chk.Services, v)
	}
	sort.Slice(chk.Services, func(i, j int) bool { return chk.Services[i].Name < chk.Services[j].Name })
	return chk, nil
}
