package manager

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// Inventory returns the platform inventory.
func (m *Manager) Inventory(ctx context.Context) (*lifecycle.Inventory, error) {
	return m.Repo.Inventory(ctx)
}

// ValidateInventory checks the fields api.md marks required.
func ValidateInventory(inv *lifecycle.Inventory) error {
	regions := map[string]bool{}
	sups := map[string]bool{}
	for i, r := range inv.RegionList() {
		where := fmt.Sprintf("inventory.regions[%d]", i)
		if r.Name == "" {
			return fmt.Errorf("%s.name is required: %w", where, lifecycle.ErrInvalidArgument)
		}
		if regions[r.Name] {
			return fmt.Errorf("%s: region %q appears twice: %w", where, r.Name, lifecycle.ErrInvalidArgument)
		}
		regions[r.Name] = true
		for j, s := range r.Supervisors {
			w := fmt.Sprintf("%s.supervisors[%d]", where, j)
			for field, v := range map[string]string{"name": s.Name, "id": s.ID, "version": s.Version} {
				if v == "" {
					return fmt.Errorf("%s.%s is required: %w", w, field, lifecycle.ErrInvalidArgument)
				}
			}
			if sups[s.Name] {
				return fmt.Errorf("%s: supervisor %q appears twice: %w", w, s.Name, lifecycle.ErrInvalidArgument)
			}
			sups[s.Name] = true
		}
	}
	return nil
}

// SupervisorUpgradeCheck is the verdict for one Supervisor upgrade.
type SupervisorUpgradeCheck struct {
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

// PutInventory replaces the platform inventory. Every Supervisor whose
// version (or Kubernetes version) rises is evaluated against the services
// installed on it, and the outcome is recorded on each affected service's
// errorDetails. New Supervisors trigger services that asked for
// reconfiguration on new-supervisor events.
func (m *Manager) PutInventory(ctx context.Context, inv *lifecycle.Inventory) ([]*SupervisorUpgradeCheck, error) {
	if err := ValidateInventory(inv); err != nil {
		return nil, err
	}
	old, err := m.Repo.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutInventory(inv) }); err != nil {
		return nil, err
	}
	before := steps.SupervisorsByName(old)
	var checks []*SupervisorUpgradeCheck
	added := false
	for _, r := range inv.RegionList() {
		for _, s := range r.Supervisors {
			prev, ok := before[s.Name]
			if !ok {
				added = true
				continue
			}
			if version.Compare(s.Version, prev.Version) > 0 || (s.KubernetesVersion != "" && version.Compare(s.KubernetesVersion, prev.KubernetesVersion) > 0) {
				chk, err := m.evaluateSupervisor(ctx, s.Name, s.Version, s.KubernetesVersion)
				if err != nil {
					return nil, err
				}
				checks = append(checks, chk)
				if err := m.recordSupervisorCheck(ctx, chk); err != nil {
					return nil, err
				}
			}
		}
	}
	if added {
		m.reconfigureForNewSupervisors(ctx)
	}
	return checks, nil
}

// CheckSupervisorUpgrade evaluates every service installed on a Supervisor
// against a target version without changing anything.
func (m *Manager) CheckSupervisorUpgrade(ctx context.Context, supervisor, targetVersion, targetK8s string) (*SupervisorUpgradeCheck, error) {
	if strings.TrimSpace(targetVersion) == "" {
		return nil, fmt.Errorf("targetVersion is required (e.g. 9.1.0.0): %w", lifecycle.ErrInvalidArgument)
	}
	inv, err := m.Repo.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	sup, ok := steps.SupervisorsByName(inv)[supervisor]
	if !ok {
		return nil, fmt.Errorf("supervisor %q is not in the platform inventory: %w", supervisor, lifecycle.ErrNotFound)
	}
	if targetK8s == "" {
		targetK8s = sup.KubernetesVersion
	}
	return m.evaluateSupervisor(ctx, sup.Name, targetVersion, targetK8s)
}

// evaluateSupervisor runs the compatibility service over the services
// with resources on a Supervisor.
func (m *core) evaluateSupervisor(ctx context.Context, supervisor, version, k8s string) (*SupervisorUpgradeCheck, error) {
	chk := &SupervisorUpgradeCheck{Supervisor: supervisor, TargetVersion: version}
	var pkgs []lifecycle.PackageVersion
	var svcs []*lifecycle.Service
	for _, svc := range m.Repo.Services(ctx) {
		if svc.Digest == "" || svc.LifecycleState == lifecycle.StateDecommissioned || svc.LifecycleState == lifecycle.StateInactive && svc.Status != lifecycle.StatusHealthy {
			continue
		}
		res, err := m.Repo.Resources(ctx, svc.ID)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(steps.InstalledSupervisors(svc, res), supervisor) {
			continue
		}
		b, err := m.Bundles.Load(svc.Digest)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, steps.PackageVersion(b, svc.Version, svc.BuiltIn))
		svcs = append(svcs, svc)
	}
	if len(pkgs) == 0 {
		return chk, nil
	}
	verdicts, err := m.Peers.Compatibility.EvaluateSupervisorUpgrade(ctx, lifecycle.Environment{Supervisor: supervisor, SupervisorVersion: version, KubernetesVersion: k8s}, pkgs)
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

// recordSupervisorCheck keeps a Supervisor upgrade's verdict on each
// affected service's errorDetails.
func (m *core) recordSupervisorCheck(ctx context.Context, chk *SupervisorUpgradeCheck) error {
	for _, v := range chk.Services {
		prefix := fmt.Sprintf("Supervisor %s upgrade to %s: ", chk.Supervisor, chk.TargetVersion)
		_, err := m.Mutate(ctx, v.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
			kept := s.ErrorDetails[:0:0]
			for _, d := range s.ErrorDetails {
				if !strings.HasPrefix(d.Message, fmt.Sprintf("Supervisor %s upgrade to ", chk.Supervisor)) {
					kept = append(kept, d)
				}
			}
			s.ErrorDetails = kept
			for _, r := range v.Results {
				sev := lifecycle.SeverityInfo
				switch strings.ToUpper(r.Severity) {
				case "ERROR":
					sev = lifecycle.SeverityError
				case "WARNING":
					sev = lifecycle.SeverityWarn
				}
				s.ErrorDetails = append(s.ErrorDetails, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeConfiguration, Severity: sev, Message: prefix + r.Message})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// reconfigureForNewSupervisors re-applies services that asked to follow
// new Supervisors.
func (m *core) reconfigureForNewSupervisors(ctx context.Context) {
	for _, svc := range m.Repo.Services(ctx) {
		if svc.LifecycleState != lifecycle.StateActive || !containsString(svc.Reconfigure, "new-supervisor") {
			continue
		}
		_, err := m.Apply(ctx, svc.ID, Change{Reconfigure: []string{"new-supervisor"}, RequestedBy: "inventory"})
		if err != nil {
			m.Log.Warn("reconfigure for a new Supervisor", "service", svc.ID, "error", err)
		}
	}
}

func containsString(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
