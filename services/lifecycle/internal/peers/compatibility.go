package peers

import (
	"context"

	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
)

// Compatibility is lifecycle.Compatibility over the compatibility
// service's gRPC client.
type Compatibility struct {
	c compatibilityv1.CompatibilityServiceClient
}

var _ lifecycle.Compatibility = Compatibility{}

func packageVersion(p lifecycle.PackageVersion) *compatibilityv1.PackageVersion {
	c := p.Constraints
	return &compatibilityv1.PackageVersion{Name: p.Name, Version: p.Version, BuiltIn: p.BuiltIn,
		Constraints: &compatibilityv1.Constraints{SupervisorVersion: c.SupervisorVersion, KubernetesVersion: c.KubernetesVersion,
			SourceUpgrade: c.SourceUpgrade, DestinationUpgrade: c.DestinationUpgrade}}
}

func packageVersions(ps []lifecycle.PackageVersion) []*compatibilityv1.PackageVersion {
	var out []*compatibilityv1.PackageVersion
	for _, p := range ps {
		out = append(out, packageVersion(p))
	}
	return out
}

func environment(e lifecycle.Environment) *compatibilityv1.Environment {
	return &compatibilityv1.Environment{Supervisor: e.Supervisor, SupervisorVersion: e.SupervisorVersion, KubernetesVersion: e.KubernetesVersion}
}

func environments(es []lifecycle.Environment) []*compatibilityv1.Environment {
	var out []*compatibilityv1.Environment
	for _, e := range es {
		out = append(out, environment(e))
	}
	return out
}

// ValidatePackage validates a package and statically checks its documents.
func (c Compatibility) ValidatePackage(ctx context.Context, req lifecycle.PackageValidation) (*lifecycle.Validation, error) {
	resp, err := c.c.ValidatePackage(ctx, &compatibilityv1.ValidatePackageRequest{
		PackageYaml: req.PackageYAML, Resources: wire.DocumentsProto(req.Documents), BuiltIn: req.BuiltIn,
	})
	if err != nil {
		return nil, peerError("compatibility", err)
	}
	out := &lifecycle.Validation{Valid: resp.GetValid()}
	for _, is := range resp.GetIssues() {
		out.Issues = append(out.Issues, lifecycle.ValidationIssue{Kind: is.GetKind(), Source: is.GetSource(), Expression: is.GetExpression(), Message: is.GetMessage()})
	}
	return out, nil
}

// EvaluateInstall evaluates installing a package on Supervisors.
func (c Compatibility) EvaluateInstall(ctx context.Context, pkg lifecycle.PackageVersion, envs []lifecycle.Environment) (*lifecycle.Verdict, error) {
	resp, err := c.c.EvaluateInstall(ctx, &compatibilityv1.EvaluateInstallRequest{Package: packageVersion(pkg), Environments: environments(envs)})
	if err != nil {
		return nil, peerError("compatibility", err)
	}
	return &lifecycle.Verdict{Blocked: resp.GetBlocked(), Results: wire.CheckResults(resp.GetResults())}, nil
}

// EvaluateUpgrade evaluates an upgrade from installed to target.
func (c Compatibility) EvaluateUpgrade(ctx context.Context, installed, target lifecycle.PackageVersion, envs []lifecycle.Environment) (*lifecycle.Verdict, error) {
	resp, err := c.c.EvaluateUpgrade(ctx, &compatibilityv1.EvaluateUpgradeRequest{
		Installed: packageVersion(installed), Target: packageVersion(target), Environments: environments(envs),
	})
	if err != nil {
		return nil, peerError("compatibility", err)
	}
	return &lifecycle.Verdict{Blocked: resp.GetBlocked(), Results: wire.CheckResults(resp.GetResults())}, nil
}

// EvaluateSupervisorUpgrade evaluates packages against a Supervisor's
// target version, one verdict per package.
func (c Compatibility) EvaluateSupervisorUpgrade(ctx context.Context, target lifecycle.Environment, pkgs []lifecycle.PackageVersion) ([]lifecycle.Verdict, error) {
	resp, err := c.c.EvaluateSupervisorUpgrade(ctx, &compatibilityv1.EvaluateSupervisorUpgradeRequest{Target: environment(target), Packages: packageVersions(pkgs)})
	if err != nil {
		return nil, peerError("compatibility", err)
	}
	out := make([]lifecycle.Verdict, 0, len(resp.GetEvaluations()))
	for _, ev := range resp.GetEvaluations() {
		out = append(out, lifecycle.Verdict{Blocked: ev.GetBlocked(), Results: wire.CheckResults(ev.GetResults())})
	}
	return out, nil
}

// PlanUpgradePath asks for a legal chain of versions.
func (c Compatibility) PlanUpgradePath(ctx context.Context, req lifecycle.PathRequest) ([]string, bool, error) {
	resp, err := c.c.PlanUpgradePath(ctx, &compatibilityv1.PlanUpgradePathRequest{
		Installed: packageVersion(req.Installed), Available: packageVersions(req.Available),
		TargetVersion: req.TargetVersion, Environments: environments(req.Environments),
	})
	if err != nil {
		return nil, false, peerError("compatibility", err)
	}
	return resp.GetPath(), resp.GetFound(), nil
}
