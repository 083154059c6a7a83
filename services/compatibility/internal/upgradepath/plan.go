// Package upgradepath plans the shortest legal chain of upgrades from an
// installed service version to a target version (e.g. 1.0.0 → 1.5.0 →
// 2.0.0 when 2.0.0 only accepts upgrades from 1.5.0 or later), or explains
// hop by hop why there is none.
//
// Rules:
//   - versions are ordered by semver (Syntax A); every version must be
//     valid semver;
//   - a hop only goes to a higher version, and never past the target;
//   - a hop is legal when compat's upgrade evaluation does not block it:
//     the target's source constraint accepts the from-version, the
//     from-version's destination constraint accepts the to-version, and the
//     to-version's Supervisor and Kubernetes constraints hold on every
//     environment (a built-in to-version is compatible by default);
//   - the chain with the fewest hops wins; among chains of equal length
//     the one whose first differing hop lands on the newer version wins
//     (newer intermediates carry more fixes and are the upgrade sources
//     vendors test most recently).
package upgradepath

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

// Bounds of one plan: every pair of versions may need evaluating, and a
// refused hop is reported with its results.
const (
	MaxVersions    = 1000
	MaxRefusedHops = 500
)

// Request asks for a plan.
type Request struct {
	Installed compat.PackageVersion
	// Available are the registered versions of the same service; the
	// installed version and older ones may be among them (they are
	// ignored).
	Available []compat.PackageVersion
	// TargetVersion empty means the newest available version.
	TargetVersion string
	Environments  []compat.Environment
}

// Hop is one upgrade step and its results: the blocking ones for a
// refused hop, the informative ones (WARNING, INFO) for a hop on the path.
type Hop struct {
	From, To string
	Results  []compat.Result
}

// Plan is the answer.
type Plan struct {
	Found bool
	// Path lists the versions after the installed one, ending at the target.
	Path []string
	// PathHops are the hops of Path with their non-blocking results.
	PathHops []Hop
	// RefusedHops explain the refused hops reachable from the installed
	// version: all of them when no path exists, the direct hop to the
	// target when the path needs more than one hop.
	RefusedHops []Hop
	Message     string
}

// Planner plans upgrade paths.
type Planner struct {
	ev *compat.Evaluator
}

// NewPlanner returns a planner evaluating hops with ev.
func NewPlanner(ev *compat.Evaluator) *Planner { return &Planner{ev: ev} }

type node struct {
	pkg      *compat.PackageVersion
	compiled *compat.Compiled
	v        semver.Version
}

// Plan computes the plan of req.
func (p *Planner) Plan(req Request) (Plan, error) {
	nodes, target, early, err := p.prepare(req)
	if err != nil {
		return Plan{}, err
	}
	if early != nil {
		return *early, nil
	}
	g := explore(nodes, target, req.Environments)
	if !g.reachable[target] {
		return g.noPath(req.Installed.Name, req.Installed.Version), nil
	}
	return g.shortest(req.Installed.Name, req.Installed.Version), nil
}

// hopGraph is every hop evaluated from the installed version (node 0) up
// to the target.
type hopGraph struct {
	nodes        nodeList
	target       int
	reachable    []bool
	legal        [][]int                    // legal[u]: the nodes u may upgrade to
	hopResults   map[[2]int][]compat.Result // non-blocking results of legal hops
	refused      []Hop
	refusedCount int
	direct       *Hop // the refused direct hop, if it is refused
}

// explore evaluates the hops out of every reachable node. Versions are
// sorted ascending and hops only go up, so visiting nodes in order visits
// every node after all the nodes that can reach it.
func explore(nodes nodeList, target int, envs []compat.Environment) *hopGraph {
	n := target + 1 // nodes[0] is the installed version; none above target matter
	g := &hopGraph{nodes: nodes, target: target, reachable: make([]bool, n), legal: make([][]int, n), hopResults: map[[2]int][]compat.Result{}}
	g.reachable[0] = true
	for u := 0; u < target; u++ {
		if !g.reachable[u] {
			continue
		}
		for w := u + 1; w <= target; w++ {
			v := nodes.session.Upgrade(nodes.list[u].compiled, nodes.list[w].compiled, envs)
			if v.Blocked {
				hop := Hop{From: nodes.list[u].pkg.Version, To: nodes.list[w].pkg.Version, Results: v.Results}
				if u == 0 && w == target {
					g.direct = &hop
				}
				g.refusedCount++
				if len(g.refused) < MaxRefusedHops {
					g.refused = append(g.refused, hop)
				}
				continue
			}
			g.legal[u] = append(g.legal[u], w)
			if len(v.Results) > 0 {
				g.hopResults[[2]int{u, w}] = v.Results
			}
			g.reachable[w] = true
		}
	}
	return g
}

// noPath explains why the target cannot be reached.
func (g *hopGraph) noPath(name, installedVersion string) Plan {
	targetVersion := g.nodes.list[g.target].pkg.Version
	plan := Plan{RefusedHops: g.refused}
	var via []string
	for u := 1; u < g.target; u++ {
		if g.reachable[u] {
			via = append(via, g.nodes.list[u].pkg.Version)
		}
	}
	msg := fmt.Sprintf("no legal upgrade path for %s from %s to %s", name, installedVersion, targetVersion)
	if len(via) == 0 {
		msg += fmt.Sprintf("; %s cannot be upgraded to any version up to %s", installedVersion, targetVersion)
	} else {
		msg += fmt.Sprintf("; reachable from %s: %s, and none of them leads on to %s", installedVersion, strings.Join(via, ", "), targetVersion)
	}
	if g.direct != nil && len(g.direct.Results) > 0 {
		msg += "; the direct upgrade is refused: " + g.direct.Results[0].Message()
	}
	msg += "; refused_hops explains every refused hop"
	if more := g.refusedCount - len(g.refused); more > 0 {
		msg += fmt.Sprintf(" (%d more are not listed)", more)
	}
	plan.Message = msg
	return plan
}

// shortest walks the fewest hops, preferring the newer version at each
// hop among equally short chains.
func (g *hopGraph) shortest(name, installedVersion string) Plan {
	// dist[u] is the fewest hops from u to the target; computed from the
	// top down since every legal hop goes up.
	const unreachable = int(^uint(0) >> 1)
	dist := make([]int, g.target+1)
	for u := range dist {
		dist[u] = unreachable
	}
	dist[g.target] = 0
	for u := g.target - 1; u >= 0; u-- {
		for _, w := range g.legal[u] {
			if dist[w] != unreachable && dist[w]+1 < dist[u] {
				dist[u] = dist[w] + 1
			}
		}
	}
	plan := Plan{Found: true}
	for u := 0; u != g.target; {
		next := -1
		for _, w := range g.legal[u] { // ascending, so the last match is the newest
			if dist[w] == dist[u]-1 {
				next = w
			}
		}
		plan.Path = append(plan.Path, g.nodes.list[next].pkg.Version)
		plan.PathHops = append(plan.PathHops, Hop{From: g.nodes.list[u].pkg.Version, To: g.nodes.list[next].pkg.Version, Results: g.hopResults[[2]int{u, next}]})
		u = next
	}
	chain := installedVersion + " → " + strings.Join(plan.Path, " → ")
	if len(plan.Path) == 1 {
		plan.Message = fmt.Sprintf("upgrade %s %s directly", name, chain)
		return plan
	}
	plan.Message = fmt.Sprintf("upgrade %s %s (%d hops)", name, chain, len(plan.Path))
	if g.direct != nil {
		plan.RefusedHops = []Hop{*g.direct}
		if len(g.direct.Results) > 0 {
			plan.Message += "; the direct upgrade is refused: " + g.direct.Results[0].Message()
		}
	}
	return plan
}

type nodeList struct {
	session *compat.Session
	list    []node
}

// prepare validates the request and orders its versions: list[0] is the
// installed version, then every higher available version up to the target,
// ascending; target indexes list. early is set when the answer needs no
// planning.
func (p *Planner) prepare(req Request) (nodes nodeList, target int, early *Plan, err error) {
	if len(req.Available) > MaxVersions {
		return nodes, 0, nil, fmt.Errorf("%w: %d available versions, at most %d are planned over",
			compat.ErrInvalidRequest, len(req.Available), MaxVersions)
	}
	s := p.ev.NewSession()
	nodes.session = s
	installed, all, targetV, err := parseVersions(s, req)
	if err != nil {
		return nodes, 0, nil, err
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].v.LT(all[j].v) })
	for i := 1; i < len(all); i++ {
		if all[i].v.EQ(all[i-1].v) && !all[i].v.EQ(installed.v) {
			return nodes, 0, nil, fmt.Errorf("%w: version %s is available twice (as %q and %q)",
				compat.ErrInvalidRequest, all[i].v, all[i-1].pkg.Version, all[i].pkg.Version)
		}
	}

	name, from := req.Installed.Name, req.Installed.Version
	if req.TargetVersion == "" {
		if len(all) == 0 || !all[len(all)-1].v.GT(installed.v) {
			return nodes, 0, &Plan{Found: true, Message: fmt.Sprintf("%s %s is already the newest available version", name, from)}, nil
		}
		targetV = all[len(all)-1].v
	}
	switch {
	case targetV.EQ(installed.v):
		return nodes, 0, &Plan{Found: true, Message: fmt.Sprintf("%s is already at %s", name, from)}, nil
	case targetV.LT(installed.v):
		return nodes, 0, &Plan{Message: fmt.Sprintf("target %s of %s is older than the installed %s; upgrades only move to higher versions (going back is a rollback)",
			req.TargetVersion, name, from)}, nil
	}
	nodes.list = append(nodes.list, installed)
	for _, nd := range all {
		if nd.v.GT(installed.v) && !nd.v.GT(targetV) {
			nodes.list = append(nodes.list, nd)
		}
	}
	last := len(nodes.list) - 1
	if last == 0 || !nodes.list[last].v.EQ(targetV) {
		return nodes, 0, nil, fmt.Errorf("%w: target_version %s is not among the available versions of %s",
			compat.ErrInvalidRequest, req.TargetVersion, name)
	}
	return nodes, last, nil, nil
}

// parseVersions compiles and parses the installed, available and target
// versions, collecting every problem before answering, so the caller sees
// them all.
func parseVersions(s *compat.Session, req Request) (installed node, all []node, targetV semver.Version, err error) {
	var problems []string
	installed = node{pkg: &req.Installed, compiled: s.Compile(&req.Installed, compat.At("installed"))}
	if v, perr := constraint.ParseServiceVersion(req.Installed.Version); perr != nil {
		problems = append(problems, fmt.Sprintf("installed.version %q is not valid semver (%v)", req.Installed.Version, perr))
	} else {
		installed.v = v
	}
	all = make([]node, 0, len(req.Available))
	for i := range req.Available {
		a := &req.Available[i]
		nd := node{pkg: a, compiled: s.Compile(a, compat.Item("available", i, ""))}
		if a.Name != req.Installed.Name {
			problems = append(problems, fmt.Sprintf("available[%d].name %q is not installed.name %q: plan over the versions of one service",
				i, a.Name, req.Installed.Name))
		}
		v, perr := constraint.ParseServiceVersion(a.Version)
		if perr != nil {
			problems = append(problems, fmt.Sprintf("available[%d].version %q is not valid semver (%v)", i, a.Version, perr))
			continue
		}
		nd.v = v
		all = append(all, nd)
	}
	if req.TargetVersion != "" {
		v, perr := constraint.ParseServiceVersion(req.TargetVersion)
		if perr != nil {
			problems = append(problems, fmt.Sprintf("target_version %q is not valid semver (%v)", req.TargetVersion, perr))
		}
		targetV = v
	}
	for i := range req.Environments {
		s.CheckEnvironment(&req.Environments[i], compat.Item("environments", i, ""))
	}
	if len(problems) > 0 {
		return installed, nil, targetV, fmt.Errorf("%w: %s; upgrade paths are planned over the semver versions of one service",
			compat.ErrInvalidRequest, strings.Join(problems, "; "))
	}
	if serr := s.Err(); serr != nil {
		return installed, nil, targetV, serr
	}
	return installed, all, targetV, nil
}
