package reads

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// Resource plan actions (seed 002 "Resource Handling During Upgrade").
const (
	ActionCreated        = "created"
	ActionDecommissioned = "decommissioned"
	ActionReconfigured   = "reconfigured"
	ActionUnchanged      = "unchanged"
)

// UpgradePlan is everything an upgrade checks and would do.
type UpgradePlan struct {
	FromVersion, ToVersion string
	Allowed                bool
	Compatibility          []lifecycle.CheckResult
	Hook                   *lifecycle.HookReport
	Dynamic                *lifecycle.PreCheckReport
	ConfigurationErrors    []string
	Resources              []PlanEntry
	SuggestedPath          []string
	BlockingReasons        []string
	// Acceptance is what the upgrade request must accept (Required), the
	// new version's access grants and how they differ from the accepted.
	Acceptance steps.Acceptance
	// Targets are the fleet plan's lines, one per Supervisor, when the
	// upgrade rolls out with Strategy (nil: all at once, no lines).
	Targets  []TargetPlan
	Strategy *lifecycle.RolloutStrategy
	// Source and Digest are the target bundle's; Basis what the plan was
	// computed from (fleet.Basis). Storing the plan keeps them.
	Source, Digest string
	Basis          lifecycle.PlanBasis
	// PlanID and ExpiresAt are set once the plan is stored.
	PlanID    string
	ExpiresAt time.Time
}

// PlanEntry says what an upgrade does with one resource.
type PlanEntry struct {
	Type, Name, Supervisor, Action string
	// CurrentYAML and PlannedYAML are the resource before and after (empty
	// where it does not exist, and for unchanged resources) so a client
	// can show what a reconfiguration changes.
	CurrentYAML, PlannedYAML string
}

// planVersions are what a plan compares: the installed version (svc, its
// bundle ob) and the target (next, its bundle nb, version to).
type planVersions struct {
	svc, next *lifecycle.Service
	ob, nb    *bundle.Bundle
	to        string
	// signature is the signature policy's ERROR on the target (nil: it
	// holds), checked once for the plan and its lines.
	signature *lifecycle.CheckResult
}

// planResources classifies each resource as an upgrade would handle it.
func planResources(have []*lifecycle.Resource, want []*lifecycle.Resource) []PlanEntry {
	d := lifecycle.DiffResources(have, want)
	out := make([]PlanEntry, 0, len(d.Changes)+len(d.Removed))
	for _, c := range d.Changes {
		e := PlanEntry{Type: c.Want.Kind, Name: c.Want.Name, Supervisor: c.Want.Supervisor, Action: ActionCreated, PlannedYAML: lifecycle.DocYAML(c.Want.Doc)}
		if c.Have != nil {
			e.Action, e.PlannedYAML = ActionUnchanged, ""
			if c.Have.Hash != c.Want.Hash {
				e.Action, e.CurrentYAML, e.PlannedYAML = ActionReconfigured, lifecycle.DocYAML(c.Have.Doc), lifecycle.DocYAML(c.Want.Doc)
			}
		}
		out = append(out, e)
	}
	for _, r := range d.Removed {
		out = append(out, PlanEntry{Type: r.Kind, Name: r.Name, Supervisor: r.Supervisor, Action: ActionDecommissioned, CurrentYAML: lifecycle.DocYAML(r.Doc)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		if out[i].Supervisor != out[j].Supervisor {
			return out[i].Supervisor < out[j].Supervisor
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// PreviewUpgrade runs every check of an upgrade without changing anything
// and returns what the upgrade would do.
func (p *Previews) PreviewUpgrade(ctx context.Context, req PreviewRequest) (*UpgradePlan, error) {
	svc, err := p.reader.Get(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	strategy, err := p.resolveStrategy(ctx, svc, req.Rollout)
	if err != nil {
		return nil, err
	}
	basis, err := p.basis(ctx, svc)
	if err != nil {
		return nil, err
	}
	ob, err := p.reader.requestBundle(svc)
	if err != nil {
		return nil, err
	}
	nb, err := p.previewTarget(ctx, svc, req.Source, req.TargetVersion)
	if err != nil {
		return nil, err
	}
	toVersion, err := steps.CheckTargetBundle(svc, nb)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, lifecycle.ErrInvalidArgument)
	}
	plan := &UpgradePlan{FromVersion: svc.Version, ToVersion: toVersion, Allowed: true,
		Strategy: strategy, Source: nb.Source, Digest: nb.Digest, Basis: basis}
	if _, err := steps.ValidateBundle(ctx, p.ports.Render(), p.ports.Peers.Compatibility, svc, nb); err != nil {
		if errors.Is(err, lifecycle.ErrUnavailable) {
			return nil, err
		}
		plan.block(err.Error())
	}
	plan.ConfigurationErrors = steps.CheckConfiguration(ctx, p.ports.Render(), svc, nb)
	for _, e := range plan.ConfigurationErrors {
		plan.block("configuration: " + e)
	}
	next := svc.Clone()
	next.Version, next.Digest = toVersion, nb.Digest
	rend, err := steps.Render(ctx, p.ports.Render(), next, nb, lifecycle.RenderInput{})
	if err != nil {
		if errors.Is(err, lifecycle.ErrUnavailable) {
			return nil, err
		}
		plan.block("render: " + err.Error())
		return plan, nil
	}
	u := &planVersions{svc: svc, next: next, ob: ob, nb: nb, to: toVersion}
	u.signature = p.signatureCheck(u)
	if err := p.previewAcceptance(ctx, plan, u); err != nil {
		return nil, err
	}
	return plan, p.previewRollout(ctx, plan, u, rend)
}

// previewRollout checks what the upgrade would check and lays out what it
// would do with the resources, on each Supervisor when it rolls out in
// waves. The hook is asked once per Supervisor: its answers are both the
// plan's and its lines'.
func (p *Previews) previewRollout(ctx context.Context, plan *UpgradePlan, u *planVersions, rend *steps.Rendered) error {
	have, err := p.ports.Repo.Resources(ctx, u.svc.ID)
	if err != nil {
		return err
	}
	want, placeErr := rend.Place(u.next, u.to, p.ports.Now())
	var entries []PlanEntry
	if placeErr == nil {
		entries = planResources(have, want)
	}
	sups := steps.InstalledSupervisors(u.svc, have)
	if plan.Strategy != nil && placeErr == nil {
		sups = fleetSupervisors(rend, entries)
	}
	hook, hooks, err := steps.RunHookOnce(ctx, p.ports.Hook(), u.svc, u.ob, u.nb, u.to, sups)
	if err != nil {
		return err
	}
	if err := p.previewChecks(ctx, plan, u, rend, hook); err != nil {
		return err
	}
	if placeErr != nil {
		plan.block(placeErr.Error())
		return nil
	}
	plan.Resources = entries
	if plan.Strategy != nil {
		return p.fleetTargets(ctx, plan, sups, u, rend, hooks)
	}
	return nil
}

// basis fingerprints what the plan is computed from (fleet.Basis), read
// before anything else so a change made while the plan is computed shows
// as a change when it is executed.
func (p *Previews) basis(ctx context.Context, svc *lifecycle.Service) (lifecycle.PlanBasis, error) {
	inv, err := p.ports.Repo.Inventory(ctx)
	if err != nil {
		return lifecycle.PlanBasis{}, err
	}
	catalog, err := p.ports.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return lifecycle.PlanBasis{}, err
	}
	return fleet.Basis(svc, inv, catalog), nil
}

func (p *UpgradePlan) block(reason string) {
	p.Allowed = false
	p.BlockingReasons = append(p.BlockingReasons, reason)
}

// previewTarget finds the bundle a preview looks at: a source, a
// registered version, or the newest registered one.
func (p *Previews) previewTarget(ctx context.Context, svc *lifecycle.Service, source, targetVersion string) (*bundle.Bundle, error) {
	switch {
	case source != "":
		if err := lifecycle.ValidateSource(p.bundles, source); err != nil {
			return nil, err
		}
		nb, err := p.bundles.Fetch(ctx, source, nil)
		if err != nil {
			return nil, lifecycle.InvalidArgument("upgrade plan", err)
		}
		return nb, nil
	case targetVersion != "":
		entry, err := p.reader.catalogEntry(ctx, svc.Name, targetVersion)
		if err != nil {
			return nil, err
		}
		return p.bundles.Load(entry.Digest)
	}
	next, err := p.reader.AvailableUpgrade(ctx, svc)
	if err != nil {
		return nil, err
	}
	if next == nil {
		return nil, fmt.Errorf("no newer version of %s is registered: give a source or a targetVersion: %w", svc.Name, lifecycle.ErrInvalidArgument)
	}
	return p.bundles.Load(next.Digest)
}

// previewChecks runs the compatibility evaluation, the signature policy
// and the dynamic pre-checks an upgrade would run, and notes the hook's
// answers, noting what blocks.
func (p *Previews) previewChecks(ctx context.Context, plan *UpgradePlan, u *planVersions, rend *steps.Rendered, hook *lifecycle.HookReport) error {
	results, err := steps.UpgradeCompatibility(ctx, p.ports.Check(), u.svc, u.ob, u.nb, u.to, rend)
	if err != nil {
		if errors.Is(err, lifecycle.ErrUnavailable) {
			return err
		}
		plan.block(err.Error())
	}
	plan.Compatibility = results
	for _, r := range results {
		if strings.EqualFold(r.Severity, "ERROR") {
			plan.block(r.Message)
		}
	}
	if !plan.Allowed {
		plan.SuggestedPath = p.suggestPath(ctx, u.svc, u.ob, u.to, rend)
	}
	if r := u.signature; r != nil {
		plan.Compatibility = append(plan.Compatibility, *r)
		plan.block("signature policy: " + r.Message)
	}
	plan.Hook = hook
	if hook.Failure != "" {
		plan.block("pre-check hook: " + hook.Failure)
	}
	for _, r := range hook.Results {
		if strings.EqualFold(r.Severity, "ERROR") {
			plan.block("pre-check hook: " + r.Message)
		}
	}
	report, err := steps.DynamicPrechecks(ctx, p.ports.Precheck(), u.next, u.nb, rend, u.to)
	if err != nil {
		if errors.Is(err, lifecycle.ErrUnavailable) {
			return err
		}
		plan.block(err.Error())
		return nil
	}
	plan.Dynamic = report
	if report.Status == "Failed" {
		plan.block("dynamic pre-checks: " + steps.FailedChecks(report))
	}
	return nil
}

// suggestPath asks the compatibility service for a legal chain of
// registered versions.
func (p *Previews) suggestPath(ctx context.Context, svc *lifecycle.Service, ob *bundle.Bundle, toVersion string, rend *steps.Rendered) []string {
	entries, err := p.ports.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return nil
	}
	if !version.IsSemver(svc.Version) {
		return nil
	}
	var avail []lifecycle.PackageVersion
	for _, e := range entries {
		// Path planning works on semantic versions only, and only versions
		// above the installed one can be on a path.
		if e.Digest == "" || e.Status != lifecycle.StatusReady || !version.IsSemver(e.Version) || version.Compare(e.Version, svc.Version) <= 0 {
			continue
		}
		if e.Constraints != nil {
			avail = append(avail, lifecycle.PackageVersion{Name: e.Name, Version: e.Version, BuiltIn: e.BuiltIn, Constraints: *e.Constraints})
			continue
		}
		b, err := p.bundles.Load(e.Digest)
		if err != nil {
			continue
		}
		avail = append(avail, steps.PackageVersion(b, e.Version, e.BuiltIn))
	}
	envs, err := steps.Environments(ctx, p.ports.Repo, rend)
	if err != nil {
		return nil
	}
	path, found, err := p.ports.Peers.Compatibility.PlanUpgradePath(ctx, lifecycle.PathRequest{
		Installed: steps.PackageVersion(ob, svc.Version, svc.BuiltIn), Available: avail, TargetVersion: toVersion, Environments: envs,
	})
	if err != nil || !found {
		return nil
	}
	return path
}

// previewAcceptance says what the upgrade request must accept: what the
// new version's EULA, signature set and access grants change.
func (p *Previews) previewAcceptance(ctx context.Context, plan *UpgradePlan, u *planVersions) error {
	old := steps.Terms{EULA: steps.EULAOf(u.ob)}
	if p.ports.Signers != nil {
		old.Signers = p.ports.Signers(u.ob)
	}
	next, err := steps.TermsOf(ctx, p.ports.Render(), p.ports.Signers, u.next, u.nb)
	if err != nil {
		if errors.Is(err, lifecycle.ErrUnavailable) {
			return err
		}
		plan.block(err.Error())
		return nil
	}
	plan.Acceptance = steps.CompareTerms(old, u.svc.Accepted, next)
	return nil
}

// signatureCheck is the signature policy's ERROR when the target version's
// bundle fails it: every path that makes the version live refuses it (the
// upgrade's download, each wave of a rollout), so the plan is blocked. Nil
// when the policy holds or no trusted keys are configured.
func (p *Previews) signatureCheck(u *planVersions) *lifecycle.CheckResult {
	err := steps.SignaturePolicy(p.ports.VerifySignatures, u.svc, u.to, u.nb)
	if err == nil {
		return nil
	}
	return &lifecycle.CheckResult{Severity: "ERROR", Kind: steps.KindSignature, Subject: u.svc.Name + " " + u.to,
		Message: err.Error(), Source: "signature-keys"}
}
