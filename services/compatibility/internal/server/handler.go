// Package server is the gRPC adapter of the compatibility service: it
// converts messages to the domain types, calls the domain and converts
// back. Domain errors become gRPC codes through ErrorTable.
package server

import (
	"context"
	"errors"
	"fmt"

	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/pkgdoc"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/upgradepath"
)

// Handler implements compatibilityv1.CompatibilityServiceServer.
type Handler struct {
	compatibilityv1.UnimplementedCompatibilityServiceServer
	eval      *compat.Evaluator
	validator *pkgdoc.Validator
	planner   *upgradepath.Planner
}

// NewHandler builds the handler on the domain services.
func NewHandler(eval *compat.Evaluator, validator *pkgdoc.Validator, planner *upgradepath.Planner) *Handler {
	return &Handler{eval: eval, validator: validator, planner: planner}
}

// ValidatePackage validates a package.yml and its rendered resources.
func (h *Handler) ValidatePackage(ctx context.Context, req *compatibilityv1.ValidatePackageRequest) (*compatibilityv1.ValidatePackageResponse, error) {
	res, err := h.validator.Validate(ctx, pkgdoc.Request{
		PackageYAML: req.GetPackageYaml(),
		Resources:   toResources(req.GetResources()),
		BuiltIn:     req.GetBuiltIn(),
	})
	if err != nil {
		return nil, err
	}
	return &compatibilityv1.ValidatePackageResponse{
		Valid:   res.Valid,
		Package: fromPackage(res.Package),
		Issues:  fromIssues(res.Issues),
	}, nil
}

// EvaluateInstall evaluates an installation on each environment.
func (h *Handler) EvaluateInstall(_ context.Context, req *compatibilityv1.EvaluateInstallRequest) (*compatibilityv1.EvaluateInstallResponse, error) {
	if req.GetPackage() == nil {
		return nil, missing("package")
	}
	v, err := h.eval.Install(toPackage(req.GetPackage()), toEnvironments(req.GetEnvironments()))
	if err != nil {
		return nil, err
	}
	return &compatibilityv1.EvaluateInstallResponse{Blocked: v.Blocked, Results: fromResults(v.Results)}, nil
}

// EvaluateUpgrade evaluates an upgrade from installed to target.
func (h *Handler) EvaluateUpgrade(_ context.Context, req *compatibilityv1.EvaluateUpgradeRequest) (*compatibilityv1.EvaluateUpgradeResponse, error) {
	var errs []error
	if req.GetInstalled() == nil {
		errs = append(errs, missing("installed"))
	}
	if req.GetTarget() == nil {
		errs = append(errs, missing("target"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	v, err := h.eval.Upgrade(toPackage(req.GetInstalled()), toPackage(req.GetTarget()), toEnvironments(req.GetEnvironments()))
	if err != nil {
		return nil, err
	}
	return &compatibilityv1.EvaluateUpgradeResponse{Blocked: v.Blocked, Results: fromResults(v.Results)}, nil
}

// EvaluateSupervisorUpgrade evaluates packages against a Supervisor about
// to upgrade.
func (h *Handler) EvaluateSupervisorUpgrade(_ context.Context, req *compatibilityv1.EvaluateSupervisorUpgradeRequest) (*compatibilityv1.EvaluateSupervisorUpgradeResponse, error) {
	if req.GetTarget() == nil {
		return nil, missing("target")
	}
	pkgs := toPackages(req.GetPackages())
	verdicts, err := h.eval.SupervisorUpgrade(toEnvironment(req.GetTarget()), pkgs)
	if err != nil {
		return nil, err
	}
	resp := &compatibilityv1.EvaluateSupervisorUpgradeResponse{Evaluations: make([]*compatibilityv1.PackageEvaluation, len(verdicts))}
	for i, v := range verdicts {
		resp.Blocked = resp.Blocked || v.Blocked
		resp.Evaluations[i] = &compatibilityv1.PackageEvaluation{
			Name: pkgs[i].Name, Version: pkgs[i].Version, Blocked: v.Blocked, Results: fromResults(v.Results),
		}
	}
	return resp, nil
}

// maxMissingReported bounds the missing-field errors one batch lists.
const maxMissingReported = 20

// BatchEvaluate evaluates many (package, environment) pairs.
func (h *Handler) BatchEvaluate(_ context.Context, req *compatibilityv1.BatchEvaluateRequest) (*compatibilityv1.BatchEvaluateResponse, error) {
	in := req.GetItems()
	items := make([]compat.BatchItem, len(in))
	installed := make([]compat.PackageVersion, len(in))
	var errs []error
	missingCount := 0
	report := func(path string) {
		if missingCount++; missingCount <= maxMissingReported {
			errs = append(errs, missing(path))
		}
	}
	for i, it := range in {
		if it.GetPackage() == nil {
			report(fmt.Sprintf("items[%d].package", i))
		}
		if it.GetEnvironment() == nil {
			report(fmt.Sprintf("items[%d].environment", i))
		}
		items[i] = compat.BatchItem{Package: toPackage(it.GetPackage()), Environment: toEnvironment(it.GetEnvironment())}
		if it.GetInstalled() != nil {
			installed[i] = toPackage(it.GetInstalled())
			items[i].Installed = &installed[i]
		}
	}
	if missingCount > 0 {
		if more := missingCount - maxMissingReported; more > 0 {
			errs = append(errs, fmt.Errorf("… and %d more missing fields", more))
		}
		return nil, errors.Join(errs...)
	}
	verdicts, err := h.eval.Batch(items)
	if err != nil {
		return nil, err
	}
	// One allocation for all results instead of one per item.
	slab := make([]compatibilityv1.BatchResult, len(verdicts))
	resp := &compatibilityv1.BatchEvaluateResponse{Results: make([]*compatibilityv1.BatchResult, len(verdicts))}
	for i, v := range verdicts {
		r := &slab[i]
		r.Blocked = v.Blocked
		r.Results = fromResults(v.Results)
		resp.Results[i] = r
	}
	return resp, nil
}

// PlanUpgradePath finds the shortest legal chain of upgrades.
func (h *Handler) PlanUpgradePath(_ context.Context, req *compatibilityv1.PlanUpgradePathRequest) (*compatibilityv1.PlanUpgradePathResponse, error) {
	if req.GetInstalled() == nil {
		return nil, missing("installed")
	}
	plan, err := h.planner.Plan(upgradepath.Request{
		Installed:     toPackage(req.GetInstalled()),
		Available:     toPackages(req.GetAvailable()),
		TargetVersion: req.GetTargetVersion(),
		Environments:  toEnvironments(req.GetEnvironments()),
	})
	if err != nil {
		return nil, err
	}
	return &compatibilityv1.PlanUpgradePathResponse{
		Found:       plan.Found,
		Path:        plan.Path,
		RefusedHops: fromHops(plan.RefusedHops),
		Message:     plan.Message,
		PathHops:    fromHops(plan.PathHops),
	}, nil
}
