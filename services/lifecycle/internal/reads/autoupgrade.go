package reads

import (
	"context"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// AutoUpgradeTarget is the version an automatic upgrade of svc moves to:
// the newest registered candidate (steps.UpgradeCandidates: Ready, newer,
// not quarantined, a pre-release only when the service opts in) that is
// not the version the service last failed on or was rolled back from
// (UpgradeBlockedFor, until an administrator clears it) and for which the
// compatibility service reports no ERROR on the Supervisors the service
// runs on. nil when there is none. The upgrade itself checks everything
// again (the hook and the dynamic pre-checks too).
func (p *Previews) AutoUpgradeTarget(ctx context.Context, svc *lifecycle.Service) (*lifecycle.CatalogEntry, error) {
	if svc.Name == "" || svc.Version == "" || svc.Digest == "" {
		return nil, nil
	}
	entries, err := p.ports.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return nil, fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
	}
	var cands []*lifecycle.CatalogEntry
	for _, e := range steps.UpgradeCandidates(entries, svc) {
		if e.Version != svc.UpgradeBlockedFor {
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	ob, err := steps.LoadBundle(p.bundles, svc)
	if err != nil {
		return nil, err
	}
	envs, err := p.installedEnvironments(ctx, svc)
	if err != nil {
		return nil, err
	}
	installed := steps.PackageVersion(ob, svc.Version, svc.BuiltIn)
	for _, e := range cands {
		next := lifecycle.PackageVersion{Name: e.Name, Version: e.Version, BuiltIn: svc.BuiltIn}
		if e.Constraints != nil {
			next.Constraints = *e.Constraints
		} else {
			nb, err := p.bundles.Load(e.Digest)
			if err != nil {
				continue
			}
			next = steps.PackageVersion(nb, e.Version, svc.BuiltIn)
		}
		verdict, err := p.ports.Peers.Compatibility.EvaluateUpgrade(ctx, installed, next, envs)
		if err != nil {
			return nil, err
		}
		if !blocks(verdict) {
			return e, nil
		}
	}
	return nil, nil
}

func blocks(v *lifecycle.Verdict) bool {
	if v.Blocked {
		return true
	}
	for _, r := range v.Results {
		if strings.EqualFold(r.Severity, "ERROR") {
			return true
		}
	}
	return false
}

// installedEnvironments are the Supervisors the installed version runs on,
// with their versions from the platform inventory.
func (p *Previews) installedEnvironments(ctx context.Context, svc *lifecycle.Service) ([]lifecycle.Environment, error) {
	res, err := p.ports.Repo.Resources(ctx, svc.ID)
	if err != nil {
		return nil, err
	}
	inv, err := p.ports.Repo.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	byName := steps.SupervisorsByName(inv)
	var envs []lifecycle.Environment
	for _, name := range steps.InstalledSupervisors(svc, res) {
		if s, ok := byName[name]; ok {
			envs = append(envs, lifecycle.Environment{Supervisor: name, SupervisorVersion: s.Version, KubernetesVersion: s.KubernetesVersion})
		}
	}
	return envs, nil
}
