package kubernetes

import (
	"context"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Driver is the Kubernetes target driver. It wires the rooms of the
// driver, each given only what it uses, and answers the target.Driver and
// target.Watcher calls by handing each to its room:
//
//   - connections (kubernetes.go): the clients per Supervisor, and the
//     informers once Watch started (watch.go);
//   - writer (write.go): the driver's own writes, each noted so its watch
//     event is not taken for drift;
//   - reader (read.go): Get, List, Secrets; health (health.go) and drift,
//     of the driver's objects and of what kapp-controller deployed
//     (deployedState, deployed.go);
//   - applier (apply.go): Apply;
//   - owners (ownership.go): Transfer, Release, Delete;
//   - stager (stage.go): Stage, Facts, KubernetesVersion.
type Driver struct {
	conns *connections
	// deployed remembers deletions of package objects and kicks.
	deployed *deployedState
	applier  *applier
	reader   *reader
	owners   *owners
	stager   *stager
}

var (
	_ target.Driver  = (*Driver)(nil)
	_ target.Watcher = (*Driver)(nil)
)

// New returns a driver; clusters are connected on first use.
func New(cfg Config) *Driver {
	conns := &connections{cfg: cfg, clusters: map[string]*cluster{}}
	deployed := newDeployedState()
	w := &writer{noteWrite: conns.noteWrite}
	r := &reader{conns: conns, deployed: deployed}
	return &Driver{
		conns:    conns,
		deployed: deployed,
		applier:  &applier{conns: conns, writer: w, reader: r, deployed: deployed},
		reader:   r,
		owners:   &owners{conns: conns, writer: w, reader: r},
		stager:   &stager{conns: conns, writer: w},
	}
}

// Close stops the informers.
func (d *Driver) Close() error {
	d.conns.stopWatch()
	return nil
}

// Apply implements target.Driver.
func (d *Driver) Apply(ctx context.Context, want target.Desired) (target.Object, error) {
	obj, err := d.applier.apply(ctx, want)
	if err != nil {
		return target.Object{}, fmt.Errorf("apply %s: %w", want.Key, err)
	}
	return obj, nil
}

// Get implements target.Driver.
func (d *Driver) Get(ctx context.Context, k target.Key) (target.Object, error) {
	return d.reader.get(ctx, k)
}

// List implements target.Driver: the anchors the service owns on every
// Supervisor the driver knows.
func (d *Driver) List(ctx context.Context, serviceID string) ([]target.Object, error) {
	return d.reader.list(ctx, serviceID)
}

// Secrets implements target.Driver.
func (d *Driver) Secrets(ctx context.Context, supervisor, namespace string) (map[string]map[string][]byte, error) {
	return d.reader.secrets(ctx, supervisor, namespace)
}

// Transfer implements target.Driver: owner and finalizers change, the
// document does not.
func (d *Driver) Transfer(ctx context.Context, k target.Key, owner target.Owner, finalizers []string) (target.Object, error) {
	return d.owners.transfer(ctx, k, owner, finalizers)
}

// Release implements target.Driver: the objects stay, without owner or
// finalizers.
func (d *Driver) Release(ctx context.Context, k target.Key) error {
	return d.owners.release(ctx, k)
}

// Delete implements target.Driver: the anchor is deleted; once only the
// Service Manager's finalizers hold it (kapp-controller has uninstalled the
// package), the other parts are cleaned up and the finalizers removed.
func (d *Driver) Delete(ctx context.Context, k target.Key) error {
	if err := d.owners.delete(ctx, k); err != nil {
		return fmt.Errorf("delete %s: %w", k, err)
	}
	return nil
}

// Stage implements target.Driver: a server-side dry run (dryRun=All) of
// every object the resource becomes. What the API server refuses (schema,
// CEL rules, admission) is reported as Rejected with its message.
func (d *Driver) Stage(ctx context.Context, want target.Desired) (target.Staged, error) {
	return d.stager.stage(ctx, want)
}

// Facts implements target.Driver for the named Supervisors: reachability,
// the Kubernetes version, capacity and the APIs discovery reports.
func (d *Driver) Facts(ctx context.Context, supervisors []string) (target.Facts, error) {
	return d.stager.facts(ctx, supervisors), nil
}

// KubernetesVersion reports a Supervisor's Kubernetes version (/version).
func (d *Driver) KubernetesVersion(supervisor string) (string, error) {
	return d.stager.kubernetesVersion(supervisor)
}

// Watch implements target.Watcher: informers on every known Supervisor
// (and each one connected later) until ctx ends or the driver closes.
// Nothing is polled: a change arrives as a watch event.
func (d *Driver) Watch(ctx context.Context, changed func(serviceID string)) error {
	d.conns.watch(ctx, changed, d.deployed)
	return nil
}
