package simulator

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Fault effects.
const (
	EffectFail        = "fail"        // the operation returns target.ErrRejected
	EffectSlow        = "slow"        // the resource stays Busy for Delay
	EffectUnhealthy   = "unhealthy"   // the resource reports Unhealthy
	EffectUnreachable = "unreachable" // the operation returns target.ErrUnreachable
	// EffectHang holds the call for Delay (or until its context ends)
	// before it acts: a target that answers slowly, so an operation stays
	// in its step (the model test holds an upgrade in maintenance so).
	EffectHang = "hang"
)

// Fault makes matching operations misbehave. Empty or "*" fields match
// anything; Identity may use a trailing "*".
type Fault struct {
	System   string `json:"system,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Identity string `json:"identity,omitempty"`
	// Op is apply, delete, release, stage, transfer, get or * (any).
	Op string `json:"op,omitempty"`
	// Version matches the owner version an apply hands the resource to
	// (a fault of one version of a service, which its rollback to the
	// previous version does not meet); other operations never match it.
	Version string `json:"version,omitempty"`
	Effect  string `json:"effect"`
	// Times the fault fires; 0 means every time.
	Times int `json:"times,omitempty"`
	// Delay of a slow create/update.
	Delay   Duration `json:"delay,omitempty"`
	Message string   `json:"message,omitempty"`
}

func (f Fault) validate() error {
	switch f.Effect {
	case EffectFail, EffectSlow, EffectUnhealthy, EffectUnreachable, EffectHang:
	default:
		return fmt.Errorf("effect %q: want fail, slow, unhealthy, unreachable or hang", f.Effect)
	}
	switch f.Op {
	case "", "*", "apply", "delete", "release", "stage", "transfer", "get":
	default:
		return fmt.Errorf("op %q: want apply, delete, release, stage, transfer, get or *", f.Op)
	}
	return nil
}

type activeFault struct {
	Fault
	fired int
}

// InjectFault adds a fault at run time.
func (s *Simulator) InjectFault(f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.faults = append(s.faults, &activeFault{Fault: f})
	s.mu.Unlock()
	s.notify(target.Change{})
	return nil
}

// ClearFaults removes every fault.
func (s *Simulator) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
	s.notify(target.Change{})
}

func matchField(pattern, v string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, "*"); ok {
		return strings.HasPrefix(v, p)
	}
	return pattern == v
}

// fault returns the first fault matching op on k (applying version, for
// an apply) and consumes one firing.
func (s *Simulator) fault(op string, k target.Key, version string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k.System == target.SystemSupervisor {
		if sup, ok := s.supervisors[k.Scope]; ok && sup.Unreachable {
			return &Fault{Effect: EffectUnreachable, Message: "Supervisor " + k.Scope + " does not answer"}
		}
	}
	for _, f := range s.faults {
		if f.Times > 0 && f.fired >= f.Times {
			continue
		}
		if !matchField(f.Op, op) || !matchField(f.System, k.System) || !matchField(f.Scope, k.Scope) ||
			!matchField(f.Kind, k.Kind) || !matchField(f.Identity, k.Identity) || (f.Version != "" && f.Version != version) {
			continue
		}
		f.fired++
		out := f.Fault
		return &out
	}
	return nil
}

// hang holds a call for a hang fault's delay, or until ctx ends.
func hang(ctx context.Context, f *Fault) error {
	if f == nil || f.Effect != EffectHang {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Duration(f.Delay)):
		return nil
	}
}

func faultError(f *Fault, op string, k target.Key) error {
	msg := f.Message
	if msg == "" {
		msg = "injected fault"
	}
	switch f.Effect {
	case EffectUnreachable:
		return fmt.Errorf("%s %s: %s: %w", op, k, msg, target.ErrUnreachable)
	case EffectFail:
		return fmt.Errorf("%s %s: %s: %w", op, k, msg, target.ErrRejected)
	}
	return nil
}
