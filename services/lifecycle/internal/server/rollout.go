package server

import (
	"context"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
)

// RolloutHandler implements lifecyclev1.RolloutServiceServer: fleet
// rollouts, quarantined versions and the provider's strategies. Who may
// call what is the method table's (platform/auth): approve, abort,
// quarantine, clear and strategies need an administrator, pause and
// resume an operator, reads a viewer.
type RolloutHandler struct {
	lifecyclev1.UnimplementedRolloutServiceServer
	r *manager.Rollouts
}

// NewRolloutHandler adapts the manager's rollouts door.
func NewRolloutHandler(m *manager.Manager) *RolloutHandler { return &RolloutHandler{r: m.Rollouts()} }

// GetRollout implements GET /v2/vcf-services/{id}/rollout.
func (h *RolloutHandler) GetRollout(ctx context.Context, req *lifecyclev1.GetRolloutRequest) (*lifecyclev1.GetRolloutResponse, error) {
	v, err := h.r.Get(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetRolloutResponse{Rollout: rolloutProto(v)}, nil
}

// act carries out an approve, pause, resume or abort.
func (h *RolloutHandler) act(ctx context.Context, id, typ, reason string) (*lifecyclev1.Rollout, error) {
	if err := checkLength("reason", reason); err != nil {
		return nil, err
	}
	v, err := h.r.Act(ctx, id, ops.RolloutAction{Type: typ, Reason: reason, RequestedBy: auth.Principal(ctx)})
	if err != nil {
		return nil, err
	}
	return rolloutProto(v), nil
}

// ApproveRollout implements POST /v2/vcf-services/{id}/rollout/approve.
func (h *RolloutHandler) ApproveRollout(ctx context.Context, req *lifecyclev1.ApproveRolloutRequest) (*lifecyclev1.ApproveRolloutResponse, error) {
	r, err := h.act(ctx, req.GetId(), ops.OpRolloutApprove, req.GetOverrideReason())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.ApproveRolloutResponse{Rollout: r}, nil
}

// PauseRollout implements POST /v2/vcf-services/{id}/rollout/pause.
func (h *RolloutHandler) PauseRollout(ctx context.Context, req *lifecyclev1.PauseRolloutRequest) (*lifecyclev1.PauseRolloutResponse, error) {
	r, err := h.act(ctx, req.GetId(), ops.OpRolloutPause, "")
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.PauseRolloutResponse{Rollout: r}, nil
}

// ResumeRollout implements POST /v2/vcf-services/{id}/rollout/resume.
func (h *RolloutHandler) ResumeRollout(ctx context.Context, req *lifecyclev1.ResumeRolloutRequest) (*lifecyclev1.ResumeRolloutResponse, error) {
	r, err := h.act(ctx, req.GetId(), ops.OpRolloutResume, "")
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.ResumeRolloutResponse{Rollout: r}, nil
}

// AbortRollout implements POST /v2/vcf-services/{id}/rollout/abort.
func (h *RolloutHandler) AbortRollout(ctx context.Context, req *lifecyclev1.AbortRolloutRequest) (*lifecyclev1.AbortRolloutResponse, error) {
	r, err := h.act(ctx, req.GetId(), ops.OpRolloutAbort, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.AbortRolloutResponse{Rollout: r}, nil
}

// QuarantineVersion implements POST /v2/vcf-service-versions/{name}/{version}/quarantine.
func (h *RolloutHandler) QuarantineVersion(ctx context.Context, req *lifecyclev1.QuarantineVersionRequest) (*lifecyclev1.QuarantineVersionResponse, error) {
	if err := checkLength("reason", req.GetReason()); err != nil {
		return nil, err
	}
	e, err := h.r.Quarantine(ctx, req.GetName(), req.GetVersion(), &lifecycle.Quarantine{Reason: req.GetReason(), By: auth.Principal(ctx)})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.QuarantineVersionResponse{Version: catalogProto(e)}, nil
}

// ClearQuarantine implements DELETE /v2/vcf-service-versions/{name}/{version}/quarantine.
func (h *RolloutHandler) ClearQuarantine(ctx context.Context, req *lifecyclev1.ClearQuarantineRequest) (*lifecyclev1.ClearQuarantineResponse, error) {
	e, err := h.r.Quarantine(ctx, req.GetName(), req.GetVersion(), nil)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.ClearQuarantineResponse{Version: catalogProto(e)}, nil
}

// GetRolloutStrategies implements GET /v2/rollout-strategies.
func (h *RolloutHandler) GetRolloutStrategies(ctx context.Context, _ *lifecyclev1.GetRolloutStrategiesRequest) (*lifecyclev1.GetRolloutStrategiesResponse, error) {
	s, err := h.r.Strategies(ctx)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetRolloutStrategiesResponse{Strategies: strategiesProto(s)}, nil
}

// PutRolloutStrategies implements PUT /v2/rollout-strategies.
func (h *RolloutHandler) PutRolloutStrategies(ctx context.Context, req *lifecyclev1.PutRolloutStrategiesRequest) (*lifecyclev1.PutRolloutStrategiesResponse, error) {
	in, err := strategiesFromProto(req.GetStrategies())
	if err != nil {
		return nil, err
	}
	s, err := h.r.PutStrategies(ctx, in)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.PutRolloutStrategiesResponse{Strategies: strategiesProto(s)}, nil
}

// maxReason bounds a reason an administrator gives (history keeps it).
const maxReason = 1024

// checkLength refuses an over-long free-text field, naming it.
func checkLength(field, v string) error {
	if len(v) > maxReason {
		return invalid("%s is %d bytes, at most %d", field, len(v), maxReason)
	}
	return nil
}
