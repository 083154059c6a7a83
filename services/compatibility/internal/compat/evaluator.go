package compat

import (
	"fmt"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

// Evaluator runs the evaluations. It is safe for concurrent use; each call
// works in its own Session on top of the shared constraint cache.
type Evaluator struct {
	cache    *constraint.Cache
	maxBatch int
	observe  Observer
}

// Observer is told each evaluation's kind (install, upgrade,
// supervisor_upgrade, batch) and result (compatible, blocked, invalid);
// a call evaluating several things reports each verdict.
type Observer func(kind, result string)

// SetObserver sets the evaluation observer (metrics). Call before use.
func (e *Evaluator) SetObserver(o Observer) { e.observe = o }

func (e *Evaluator) report(kind string, err error, vs ...Verdict) {
	if e.observe == nil {
		return
	}
	if err != nil {
		e.observe(kind, "invalid")
		return
	}
	for _, v := range vs {
		if v.Blocked {
			e.observe(kind, "blocked")
		} else {
			e.observe(kind, "compatible")
		}
	}
}

// DefaultMaxBatchItems bounds one Batch call unless configured otherwise.
const DefaultMaxBatchItems = 100_000

// NewEvaluator returns an evaluator parsing through cache. maxBatch bounds
// the items of one Batch call (0 means DefaultMaxBatchItems).
func NewEvaluator(cache *constraint.Cache, maxBatch int) *Evaluator {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatchItems
	}
	return &Evaluator{cache: cache, maxBatch: maxBatch}
}

// NewSession starts a session, for callers that evaluate many related
// things (the upgrade path planner).
func (e *Evaluator) NewSession() *Session { return newSession(e.cache) }

// Install evaluates installing pkg on every environment (Supervisor and
// Kubernetes constraints). No environment means nothing to check.
func (e *Evaluator) Install(pkg PackageVersion, envs []Environment) (v Verdict, err error) {
	defer func() { e.report("install", err, v) }()
	s := e.NewSession()
	c := s.Compile(&pkg, At("package"))
	checkEnvironments(s, envs, "environments")
	if err := s.Err(); err != nil {
		return Verdict{}, err
	}
	return s.Install(c, envs), nil
}

// Upgrade evaluates upgrading installed to target on every environment.
func (e *Evaluator) Upgrade(installed, target PackageVersion, envs []Environment) (v Verdict, err error) {
	defer func() { e.report("upgrade", err, v) }()
	s := e.NewSession()
	ci := s.Compile(&installed, At("installed"))
	ct := s.Compile(&target, At("target"))
	if installed.Name != target.Name {
		s.fail(fmt.Errorf("%w: target.name %q differs from installed.name %q: an upgrade stays within one service",
			ErrInvalidRequest, target.Name, installed.Name))
	}
	checkEnvironments(s, envs, "environments")
	if err := s.Err(); err != nil {
		return Verdict{}, err
	}
	return s.Upgrade(ci, ct, envs), nil
}

// SupervisorUpgrade evaluates every package against a Supervisor about to
// move to target's versions, one verdict per package in order.
func (e *Evaluator) SupervisorUpgrade(target Environment, pkgs []PackageVersion) (out []Verdict, err error) {
	defer func() { e.report("supervisor_upgrade", err, out...) }()
	s := e.NewSession()
	s.CheckEnvironment(&target, At("target"))
	compiled := make([]*Compiled, len(pkgs))
	for i := range pkgs {
		compiled[i] = s.Compile(&pkgs[i], Item("packages", i, ""))
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	envs := []Environment{target}
	out = make([]Verdict, len(pkgs))
	for i, c := range compiled {
		out[i] = s.Install(c, envs)
	}
	return out, nil
}

// BatchItem is an install evaluation, or an upgrade one when Installed is
// set, against one environment.
type BatchItem struct {
	Package     PackageVersion
	Installed   *PackageVersion
	Environment Environment
}

// Batch evaluates every item; verdicts are in item order.
func (e *Evaluator) Batch(items []BatchItem) (out []Verdict, err error) {
	defer func() { e.report("batch", err, out...) }()
	if len(items) > e.maxBatch {
		return nil, fmt.Errorf("%w: %d items in one batch, at most %d are accepted: split the batch",
			ErrInvalidRequest, len(items), e.maxBatch)
	}
	s := e.NewSession()
	out = make([]Verdict, len(items))
	// Validate everything before evaluating anything, so a bad item
	// rejects the batch with every problem listed.
	type compiledItem struct{ target, installed *Compiled }
	compiled := make([]compiledItem, len(items))
	for i := range items {
		it := &items[i]
		compiled[i].target = s.Compile(&it.Package, Item("items", i, "package"))
		if it.Installed != nil {
			compiled[i].installed = s.Compile(it.Installed, Item("items", i, "installed"))
			if it.Installed.Name != it.Package.Name {
				s.fail(fmt.Errorf("%w: items[%d].package.name %q differs from items[%d].installed.name %q: an upgrade stays within one service",
					ErrInvalidRequest, i, it.Package.Name, i, it.Installed.Name))
			}
		}
		s.CheckEnvironment(&it.Environment, Item("items", i, "environment"))
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	for i := range items {
		envs := []Environment{items[i].Environment}
		if c := compiled[i]; c.installed != nil {
			out[i] = s.Upgrade(c.installed, c.target, envs)
		} else {
			out[i] = s.Install(c.target, envs)
		}
	}
	return out, nil
}

func checkEnvironments(s *Session, envs []Environment, list string) {
	for i := range envs {
		s.CheckEnvironment(&envs[i], Item(list, i, ""))
	}
}
