package reads

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fiql"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// ListQuery is api.md's list query.
type ListQuery struct {
	Page     int
	PageSize *int
	Filter   string
	SortAsc  string
	SortDesc string
}

// ListResult is one page.
type ListResult struct {
	Total, PageCount, Page, PageSize int
	Services                         []*lifecycle.Service
}

// Fields a filter or sort may name; labels.<k>, locations.<k> and
// tenants.<k> reach into the maps.
var listFields = []string{"id", "vendor", "name", "version", "source", "status", "lifecycleState", "phase",
	"namespace", "createdAt", "updatedAt", "autoUpgrade", "autoRollback", "builtIn",
	"rollout.state", "rollout.toVersion", "rollout.wave", "rolloutStrategy"}

func fieldOf(s *lifecycle.Service, sel string) (string, bool) {
	switch sel {
	case "id":
		return s.ID, true
	case "vendor":
		return s.Vendor, true
	case "name":
		return s.Name, true
	case "version":
		return s.Version, true
	case "source":
		return s.Source, true
	case "status":
		return s.Status, true
	case "lifecycleState":
		return s.LifecycleState, true
	case "phase":
		return s.Phase, true
	case "namespace":
		return s.Namespace, true
	case "createdAt":
		return s.CreatedAt.Format(time.RFC3339Nano), true
	case "updatedAt":
		return s.UpdatedAt.Format(time.RFC3339Nano), true
	case "autoUpgrade":
		return strconv.FormatBool(s.AutoUpgrade), true
	case "autoRollback":
		return strconv.FormatBool(s.AutoRollback), true
	case "builtIn":
		return strconv.FormatBool(s.BuiltIn), true
	case "rolloutStrategy":
		return s.RolloutStrategy, true
	case "rollout.state", "rollout.toVersion", "rollout.wave":
		return rolloutField(s.Rollout, sel)
	}
	var m map[string]string
	var k string
	switch {
	case strings.HasPrefix(sel, "labels."):
		m, k = s.Labels, sel[len("labels."):]
	case strings.HasPrefix(sel, "locations."):
		m, k = s.Locations, sel[len("locations."):]
	case strings.HasPrefix(sel, "tenants."):
		m, k = s.Tenants, sel[len("tenants."):]
	default:
		return "", false
	}
	v, ok := m[k]
	return v, ok
}

func knownField(sel string) bool {
	for _, f := range listFields {
		if f == sel {
			return true
		}
	}
	for _, p := range []string{"labels.", "locations.", "tenants."} {
		if strings.HasPrefix(sel, p) && len(sel) > len(p) {
			return true
		}
	}
	return false
}

func unknownField(what, sel string) error {
	return fmt.Errorf("%s: unknown field %q; use one of %s, labels.<key>, locations.<key>, tenants.<key>: %w",
		what, sel, strings.Join(listFields, ", "), lifecycle.ErrInvalidArgument)
}

// enumerated are the fields whose values api.md enumerates; a filter may
// spell them in any case (status==healthy), as watch's until may.
var enumerated = map[string][]string{
	"status": {lifecycle.StatusReady, lifecycle.StatusUnresolved, lifecycle.StatusHealthy, lifecycle.StatusBusy,
		lifecycle.StatusUnhealthy, lifecycle.StatusMaintenance, lifecycle.StatusUnavailable},
	"lifecycleState": {lifecycle.StateInactive, lifecycle.StateActive, lifecycle.StatePaused, lifecycle.StateDecommissioned},
	"phase":          lifecycle.Phases,
}

// canonicalValue spells an enumerated field's value as it is stored;
// other values (and patterns with *) stay as written.
func canonicalValue(sel, arg string) string {
	for _, v := range enumerated[sel] {
		if strings.EqualFold(v, arg) {
			return v
		}
	}
	return arg
}

// compareField orders values of a field: versions numerically, the rest
// as text.
func compareField(sel, a, b string) int {
	switch sel {
	case "version", "rollout.toVersion", "rollout.wave":
		return version.Compare(a, b)
	}
	return strings.Compare(a, b)
}

// List returns one page of services matching the query.
func (r *Reader) List(ctx context.Context, q ListQuery) (*ListResult, error) {
	lq, err := parseListQuery(q)
	if err != nil {
		return nil, err
	}
	matched := r.matching(ctx, q.Filter, lq)
	res := &ListResult{Total: len(matched), Page: lq.page, PageSize: lq.size}
	if lq.size > 0 {
		res.PageCount = (len(matched) + lq.size - 1) / lq.size
		start := (lq.page - 1) * lq.size
		if start < len(matched) {
			end := min(start+lq.size, len(matched))
			for _, s := range matched[start:end] {
				res.Services = append(res.Services, s.Clone())
			}
		}
	}
	return res, nil
}

// matching returns the services the query matches, in order up to its
// page, shared (read-only): from the memo when the services have not
// changed since the same filter and sort were asked, from the memo moved
// to the current services when they have.
func (r *Reader) matching(ctx context.Context, filter string, lq listQuery) []*lifecycle.Service {
	all := r.d.Repo.Services(ctx)
	key := listKey{filter: filter, sortField: lq.sortField, desc: lq.desc}
	// Only the services up to the asked page need ordering; a page of
	// size 0 (the count only) needs none.
	need := lq.page * lq.size
	e, ok := r.lists.get(key)
	switch {
	case !ok:
		e = matchAll(all, lq.filter)
	case !sameSnapshot(e.snapshot, all):
		e = e.follow(all, lq.filter)
	case e.ordered >= need:
		return e.services
	default:
		e.services = slices.Clone(e.services) // the kept one is shared
	}
	if need > 0 {
		e.ordered = sortServices(e.services, lq.sortField, lq.desc, need)
	}
	r.lists.put(key, e)
	return e.services
}

// listQuery is a validated ListQuery.
type listQuery struct {
	page, size int
	filter     fiql.Node
	sortField  string
	desc       bool
}

func parseListQuery(q ListQuery) (listQuery, error) {
	lq := listQuery{page: q.Page, size: 25, sortField: q.SortAsc}
	if lq.page == 0 {
		lq.page = 1
	}
	if lq.page < 1 {
		return lq, fmt.Errorf("page %d: pages start at 1: %w", q.Page, lifecycle.ErrInvalidArgument)
	}
	if q.PageSize != nil {
		lq.size = *q.PageSize
	}
	if lq.size < 0 || lq.size > 128 {
		return lq, fmt.Errorf("pageSize %d: want 0 to 128: %w", lq.size, lifecycle.ErrInvalidArgument)
	}
	if q.SortAsc != "" && q.SortDesc != "" {
		return lq, fmt.Errorf("give sortAsc or sortDesc, not both: %w", lifecycle.ErrInvalidArgument)
	}
	if q.Filter != "" {
		var err error
		if lq.filter, err = fiql.Parse(q.Filter, compareField); err != nil {
			return lq, fmt.Errorf("filter: %w: %w", err, lifecycle.ErrInvalidArgument)
		}
		for _, sel := range lq.filter.Selectors() {
			if !knownField(sel) {
				return lq, unknownField("filter", sel)
			}
		}
		for _, c := range fiql.Constraints(lq.filter) {
			c.Arg = canonicalValue(c.Selector, c.Arg)
		}
	}
	if q.SortDesc != "" {
		lq.sortField, lq.desc = q.SortDesc, true
	}
	if lq.sortField != "" && !knownField(lq.sortField) {
		return lq, unknownField("sort", lq.sortField)
	}
	return lq, nil
}

// sortServices orders by a field, or by default oldest first, so pages
// are stable as services are added; ties in a sort field fall back to it
// too. It returns how many services at the start are in order: at least
// limit (all of them when limit <= 0).
func sortServices(matched []*lifecycle.Service, sortField string, desc bool, limit int) int {
	older := func(a, b *lifecycle.Service) bool {
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.ID < b.ID
	}
	type keyed struct {
		s *lifecycle.Service
		k string
	}
	ks := make([]keyed, len(matched))
	for i, s := range matched {
		ks[i].s = s
		if sortField != "" {
			ks[i].k, _ = fieldOf(s, sortField)
		}
	}
	less := func(a, b keyed) bool {
		if sortField != "" {
			c := compareField(sortField, a.k, b.k)
			if desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return older(a.s, b.s)
	}
	ordered := firstInOrder(ks, limit, less)
	for i := range ks {
		matched[i] = ks[i].s
	}
	return ordered
}

// firstInOrder puts the first limit elements of xs (by less, a strict
// total order) in order at its start, leaving the rest in no particular
// order: a page near the top of thousands of matches costs
// O(n log limit), not a full sort. It returns how many are in order.
func firstInOrder[T any](xs []T, limit int, less func(a, b T) bool) int {
	if limit <= 0 || limit*4 >= len(xs) {
		sort.Slice(xs, func(i, j int) bool { return less(xs[i], xs[j]) })
		return len(xs)
	}
	// xs[:limit] is a max-heap of the smallest elements seen so far.
	down := func(i int) {
		for {
			l, big := 2*i+1, i
			if l < limit && less(xs[big], xs[l]) {
				big = l
			}
			if r := l + 1; r < limit && less(xs[big], xs[r]) {
				big = r
			}
			if big == i {
				return
			}
			xs[i], xs[big] = xs[big], xs[i]
			i = big
		}
	}
	for i := limit/2 - 1; i >= 0; i-- {
		down(i)
	}
	for j := limit; j < len(xs); j++ {
		if less(xs[j], xs[0]) {
			xs[0], xs[j] = xs[j], xs[0]
			down(0)
		}
	}
	top := xs[:limit]
	sort.Slice(top, func(i, j int) bool { return less(top[i], top[j]) })
	return limit
}

// rolloutField is a field of the service's running (or last) rollout;
// a service that never rolled out has none.
func rolloutField(r *lifecycle.RolloutSummary, sel string) (string, bool) {
	if r == nil {
		return "", false
	}
	switch sel {
	case "rollout.state":
		return r.State, true
	case "rollout.toVersion":
		return r.ToVersion, true
	}
	return strconv.Itoa(min(r.Wave+1, r.Waves)), true
}
