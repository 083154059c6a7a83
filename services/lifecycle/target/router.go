package target

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// Router is one Driver over two: Primary for the keys it Handles (with
// the Kubernetes driver: SupervisorServices and Secrets on Supervisors),
// Fallback for every other key (VCF Automation, vCenter, SupervisorRegistry:
// systems Primary does not reach).
type Router struct {
	Primary  Driver
	Handles  func(Key) bool
	Fallback Driver
}

var _ Driver = (*Router)(nil)

func (r *Router) pick(k Key) Driver {
	if r.Handles(k) {
		return r.Primary
	}
	return r.Fallback
}

// Apply implements Driver.
func (r *Router) Apply(ctx context.Context, d Desired) (Object, error) {
	return r.pick(d.Key).Apply(ctx, d)
}

// Get implements Driver.
func (r *Router) Get(ctx context.Context, k Key) (Object, error) { return r.pick(k).Get(ctx, k) }

// Transfer implements Driver.
func (r *Router) Transfer(ctx context.Context, k Key, owner Owner, finalizers []string) (Object, error) {
	return r.pick(k).Transfer(ctx, k, owner, finalizers)
}

// Delete implements Driver.
func (r *Router) Delete(ctx context.Context, k Key) error { return r.pick(k).Delete(ctx, k) }

// Release implements Driver.
func (r *Router) Release(ctx context.Context, k Key) error { return r.pick(k).Release(ctx, k) }

// Stage implements Driver.
func (r *Router) Stage(ctx context.Context, d Desired) (Staged, error) {
	return r.pick(d.Key).Stage(ctx, d)
}

// Facts implements Driver: platform versions and non-Supervisor APIs from
// Fallback; each Supervisor as Primary reports it, plus the APIs of the
// Supervisor kinds Fallback serves for it.
func (r *Router) Facts(ctx context.Context, supervisors []string) (Facts, error) {
	base, err := r.Fallback.Facts(ctx, supervisors)
	if err != nil {
		return Facts{}, err
	}
	prim, err := r.Primary.Facts(ctx, supervisors)
	if err != nil {
		return Facts{}, err
	}
	fallback := map[string]SupervisorFacts{}
	for _, s := range base.Supervisors {
		fallback[s.Name] = s
	}
	out := base
	out.Supervisors = nil
	for _, s := range prim.Supervisors {
		for _, api := range fallback[s.Name].SupportedAPIs {
			kind := api[strings.LastIndex(api, "/")+1:]
			if !r.Handles(Key{System: SystemSupervisor, Scope: s.Name, Kind: kind}) && !slices.Contains(s.SupportedAPIs, api) {
				s.SupportedAPIs = append(s.SupportedAPIs, api)
			}
		}
		out.Supervisors = append(out.Supervisors, s)
	}
	return out, nil
}

// Secrets implements Driver: Secrets live on Supervisors.
func (r *Router) Secrets(ctx context.Context, supervisor, namespace string) (map[string]map[string][]byte, error) {
	return r.pick(Key{System: SystemSupervisor, Scope: supervisor, Kind: "Secret"}).Secrets(ctx, supervisor, namespace)
}

// List implements Driver: what both drivers hold.
func (r *Router) List(ctx context.Context, serviceID string) ([]Object, error) {
	a, err := r.Primary.List(ctx, serviceID)
	if err != nil {
		return nil, err
	}
	b, err := r.Fallback.List(ctx, serviceID)
	if err != nil {
		return nil, err
	}
	// Objects the fallback holds for keys the primary handles are leftovers
	// of a run with another driver selection: not this router's.
	for _, o := range b {
		if !r.Handles(o.Key) {
			a = append(a, o)
		}
	}
	return a, nil
}

// Watch implements Watcher when Primary does.
func (r *Router) Watch(ctx context.Context, changed func(serviceID string)) error {
	if w, ok := r.Primary.(Watcher); ok {
		return w.Watch(ctx, changed)
	}
	return errors.New("the primary driver does not watch its targets")
}

// Close closes both drivers that can be closed.
func (r *Router) Close() error {
	var errs []error
	for _, d := range []Driver{r.Primary, r.Fallback} {
		if c, ok := d.(interface{ Close() error }); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
