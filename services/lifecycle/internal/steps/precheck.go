package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// desiredFor turns a resource record into what the target should hold.
func desiredFor(res *lifecycle.Resource, owner target.Owner) target.Desired {
	fin := res.Finalizers
	return target.Desired{Key: res.Target, Namespace: res.Namespace, Spec: res.Doc, Owner: owner, Finalizers: fin}
}

// stage dry-runs every resource on its target, bounded in parallel.
func stage(ctx context.Context, p PrecheckPorts, svc *lifecycle.Service, resources []*lifecycle.Resource) ([]target.Staged, error) {
	out := make([]target.Staged, len(resources))
	err := Parallel(ctx, p.Log, p.Concurrency, len(resources), func(ctx context.Context, i int) error {
		st, err := p.Driver.Stage(ctx, desiredFor(resources[i], target.Owner{ServiceID: svc.ID, Version: resources[i].OwnerVersion}))
		if err != nil {
			return err
		}
		out[i] = st
		return nil
	})
	return out, err
}

// platformFacts merges the targets' facts with the inventory's versions.
func platformFacts(ctx context.Context, p PrecheckPorts, supervisors []string) (lifecycle.PlatformFacts, error) {
	facts, err := p.Driver.Facts(ctx, supervisors)
	if err != nil {
		return lifecycle.PlatformFacts{}, err
	}
	inv, err := p.Inventory.Inventory(ctx)
	if err != nil {
		return lifecycle.PlatformFacts{}, err
	}
	byName := SupervisorsByName(inv)
	known := map[string]target.SupervisorFacts{}
	for _, s := range facts.Supervisors {
		known[s.Name] = s
	}
	pf := lifecycle.PlatformFacts{VCFAVersion: facts.VCFAVersion}
	for _, name := range []string{target.SystemVCFA, target.SystemVCenter, target.SystemServiceManager} {
		pf.Targets = append(pf.Targets, lifecycle.TargetFacts{Name: name, SupportedAPIVersions: facts.SupportedAPIs})
	}
	for _, name := range supervisors {
		sf := known[name]
		inv := byName[name]
		k8s := inv.KubernetesVersion
		if sf.KubernetesVersion != "" {
			k8s = sf.KubernetesVersion // the Supervisor's own /version
		}
		pf.Supervisors = append(pf.Supervisors, lifecycle.SupervisorFacts{
			Name: name, Version: inv.Version, KubernetesVersion: k8s,
			Available:            sf.Available,
			SupportedAPIVersions: sf.SupportedAPIs,
		})
	}
	return pf, nil
}

// Prechecks stages the rendered resources and runs the dynamic pre-checks.
func Prechecks(ctx context.Context, p PrecheckPorts, svc *lifecycle.Service, b *bundle.Bundle, rend *Rendered, version string) error {
	report, err := DynamicPrechecks(ctx, p, svc, b, rend, version)
	if err != nil {
		return err
	}
	if _, err := p.Store.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.PreCheck = report
		return nil
	}); err != nil {
		return err
	}
	if report.Status == "Failed" {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("dynamic pre-checks failed: %s", FailedChecks(report)))
	}
	return nil
}

// DynamicPrechecks dry-runs the rendered resources on their targets and
// asks the precheck service to judge them with the platform's facts; it
// writes nothing (the upgrade plan shows its report).
func DynamicPrechecks(ctx context.Context, p PrecheckPorts, svc *lifecycle.Service, b *bundle.Bundle, rend *Rendered, version string) (*lifecycle.PreCheckReport, error) {
	resources, err := rend.Place(svc, version, p.Now())
	if err != nil {
		return nil, lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	staged, err := stage(ctx, p, svc, resources)
	if err != nil {
		return nil, err
	}
	pf, err := platformFacts(ctx, p, rend.Supervisors())
	if err != nil {
		return nil, err
	}
	req := lifecycle.PrecheckRequest{
		Bundle: lifecycle.BundleFacts{ImagesLock: b.ImagesLock, BundledImageDigests: b.BundledImageDigests,
			RegistryRepository: b.RegistryRepository, PluginManifests: b.PluginManifests},
		Platform: pf,
	}
	// One staged resource per rendered document: Secrets placed on several
	// Supervisors report the first placement.
	byDoc := map[string]int{}
	for i, res := range resources {
		k := res.Kind + "/" + res.Name + "/" + res.Supervisor
		if res.Kind == "Secret" {
			k = res.Kind + "/" + res.Name + "/"
		}
		if _, ok := byDoc[k]; !ok {
			byDoc[k] = i
		}
	}
	for _, doc := range rend.Resources {
		req.Documents = append(req.Documents, doc)
		j, ok := byDoc[doc.Kind+"/"+doc.Name+"/"+doc.Supervisor]
		if !ok {
			continue
		}
		st := staged[j]
		req.Staged = append(req.Staged, lifecycle.StagedResource{
			Index: doc.Index, Target: stagedTarget(resources[j].Target), Reachable: st.Reachable, Message: st.Message, Rejected: st.Rejected,
			Requested: st.Requested,
		})
	}
	report, err := p.Precheck.RunDynamicPrechecks(ctx, req)
	if err != nil {
		return nil, err
	}
	if report.Status == "" {
		report.Status = "Passed"
	}
	return report, nil
}

// stagedTarget names a resource's target as the precheck service looks it
// up: the Supervisor for Supervisor kinds, else the system (vcfa, vcenter,
// servicemanager).
func stagedTarget(k target.Key) string {
	if k.System == target.SystemSupervisor && k.Scope != "" {
		return k.Scope
	}
	return k.System
}

func FailedChecks(r *lifecycle.PreCheckReport) string {
	var out []string
	for _, rc := range r.ResourceChecks {
		for _, c := range rc.Checks {
			if c.Status == "Failed" {
				out = append(out, fmt.Sprintf("%s %s: %s: %s", rc.Type, rc.Name, c.Name, c.Message))
			}
		}
	}
	return strings.Join(out, "; ")
}
