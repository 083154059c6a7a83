package simulator

import (
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Fault effects.
const (
	EffectFail        = "fail"        // the operation returns target.ErrRejected
	EffectSlow        = "slow"        // the resource stays Busy for Delay
	EffectUnhealthy   = "unhealthy"   // the resource reports Unhealthy
	EffectUnreachable = "unreachable" // the operation returns target.ErrUnreachable
)

// Fault makes matching operations misbehave. Empty or "*" fields match
// anything; Identity may use a trailing "*".
type Fault struct {
	System   string `json:"system,omitempty"`
	Scope    string `json:"scope,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Identity string `json:"identity,omitempty"`
	// Op is apply, delete, release, stage, transfer, get or * (any).
	Op     string `json:"op,omitempty"`
	Effect string `json:"effect"`
	// Times the fault fires; 0 means every time.
	Times int `json:"times,omitempty"`
	// Delay of a slow create/update.
	Delay   Duration `json:"delay,omitempty"`
	Message string   `json:"message,omitempty"`
}

func (f Fault) validate() error {
	switch f.Effect {
	case EffectFail, EffectSlow, EffectUnhealthy, EffectUnreachable:
	default:
		return fmt.Errorf("effect %q: want fail, slow, unhealthy or unreachable", f.Effect)
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

// fault returns the first fault matching op on k and consumes one firing.
func (s *Simulator) fault(op string, k target.Key) *Fault {
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
			!matchField(f.Kind, k.Kind) || !matchField(f.Identity, k.Identity) {
			continue
		}
		f.fired++
		out := f.Fault
		return &out
	}
	return nil
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
