package peers

import (
	"context"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Precheck is lifecycle.Precheck over the precheck service's gRPC client.
type Precheck struct {
	c precheckv1.PrecheckServiceClient
}

var _ lifecycle.Precheck = Precheck{}

// DispatchHooks runs a service's pre-check hook, one result per request.
func (p Precheck) DispatchHooks(ctx context.Context, reqs []lifecycle.HookRequest) ([]lifecycle.HookResult, error) {
	in := &precheckv1.DispatchHooksRequest{}
	for _, r := range reqs {
		req := &precheckv1.DispatchHookRequest{
			SourcePackageYaml: r.SourcePackageYAML, TargetPackageYaml: r.TargetPackageYAML, Namespace: r.Namespace,
			ServiceName: r.ServiceName, SourceVersion: r.SourceVersion, TargetVersion: r.TargetVersion, Supervisor: r.Supervisor,
			Secrets: make(map[string]*precheckv1.SecretData, len(r.Secrets)),
		}
		for name, data := range r.Secrets {
			req.Secrets[name] = &precheckv1.SecretData{Data: data}
		}
		in.Requests = append(in.Requests, req)
	}
	resp, err := p.c.DispatchHooks(ctx, in)
	if err != nil {
		return nil, peerError("precheck", err)
	}
	out := make([]lifecycle.HookResult, 0, len(resp.GetResults()))
	for _, h := range resp.GetResults() {
		out = append(out, lifecycle.HookResult{
			Configured: h.GetConfigured(), Endpoint: h.GetEndpoint(), Results: wire.CheckResults(h.GetResults()),
			Failure: h.GetFailure(), Blocked: h.GetBlocked(), HTTPStatus: int(h.GetHttpStatus()), Supervisor: h.GetSupervisor(),
		})
	}
	return out, nil
}

func quota(q target.Quota) *precheckv1.ResourceQuota {
	return &precheckv1.ResourceQuota{CpuMillicores: q.CPUMillicores, MemoryBytes: q.MemoryBytes, StorageBytes: q.StorageBytes}
}

// RunDynamicPrechecks runs the dynamic pre-checks of a staged render.
func (p Precheck) RunDynamicPrechecks(ctx context.Context, req lifecycle.PrecheckRequest) (*lifecycle.PreCheckReport, error) {
	b, pf := req.Bundle, req.Platform
	in := &precheckv1.RunDynamicPrechecksRequest{
		Resources: wire.DocumentsProto(req.Documents),
		Bundle: &precheckv1.BundleFacts{ImagesLockYaml: b.ImagesLock, BundledImageDigests: b.BundledImageDigests,
			RegistryRepository: b.RegistryRepository, PluginManifests: b.PluginManifests},
		Platform: &precheckv1.PlatformFacts{VcfaVersion: pf.VCFAVersion},
	}
	for _, t := range pf.Targets {
		in.Platform.Targets = append(in.Platform.Targets, &precheckv1.TargetFacts{Name: t.Name, SupportedApiVersions: t.SupportedAPIVersions})
	}
	for _, s := range pf.Supervisors {
		in.Platform.Supervisors = append(in.Platform.Supervisors, &precheckv1.SupervisorFacts{
			Name: s.Name, Version: s.Version, KubernetesVersion: s.KubernetesVersion,
			Available: quota(s.Available), SupportedApiVersions: s.SupportedAPIVersions,
		})
	}
	for _, s := range req.Staged {
		in.Staged = append(in.Staged, &precheckv1.StagedResource{
			Index: int32(s.Index), Target: s.Target, Reachable: s.Reachable, Message: s.Message,
			Rejected: s.Rejected, Requested: quota(s.Requested),
		})
	}
	resp, err := p.c.RunDynamicPrechecks(ctx, in)
	if err != nil {
		return nil, peerError("precheck", err)
	}
	return wire.PreCheckReport(resp.GetReport()), nil
}
