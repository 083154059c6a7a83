// Package kubernetes is the target driver for Supervisors reached through
// their Kubernetes API (a vSphere Supervisor, or any Kubernetes cluster
// running kapp-controller).
//
// What lands on a cluster, in the service's namespace (svc-<refName, dots
// as dashes>, created and labelled as the service's):
//
//   - a SupervisorService becomes its data.packaging.carvel.dev Package and
//     PackageMetadata, a packaging.carvel.dev PackageInstall of that version
//     and the PackageInstall's values Secret (resolved through
//     spec.values.selector);
//   - a Secret becomes a v1 Secret.
//
// Every object carries the owning service and version in labels and
// annotations; the resource's anchor (the PackageInstall, or the Secret)
// also carries the cleanup finalizer and the desired document, so Get can
// report drift. Writes are server-side apply with one field manager.
//
// The driver only reaches Supervisor-system SupervisorServices and
// Secrets; Router sends everything else (VCF Automation, vCenter,
// SupervisorRegistry) to another driver.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// FieldManager is the one server-side apply field manager of the Service
// Manager.
const FieldManager = "vcfsm"

// Config configures New.
type Config struct {
	// KubeconfigDir holds <supervisor>.kubeconfig per Supervisor.
	KubeconfigDir string
	// KubeconfigFor returns the inventory's kubeconfig file of a
	// Supervisor ("" for none); it wins over Kubeconfigs and KubeconfigDir.
	// It is read when the driver first connects to the Supervisor.
	KubeconfigFor func(supervisor string) string
	// Kubeconfigs maps a Supervisor name to a kubeconfig file; it wins over
	// KubeconfigDir.
	Kubeconfigs map[string]string
	// RESTConfig, when set, builds the client config of a Supervisor
	// (tests); it wins over the kubeconfig files.
	RESTConfig func(supervisor string) (*rest.Config, error)
}

// connections holds the clients of each Supervisor, connected on first
// use, and the informers watching them once Watch started (watch.go).
type connections struct {
	cfg Config

	mu       sync.Mutex
	clusters map[string]*cluster
	watching *watchState
}

// cluster is one Supervisor's clients.
type cluster struct {
	name      string
	dyn       dynamic.Interface
	kube      kubernetes.Interface
	discovery discovery.DiscoveryInterface

	nsMu sync.Mutex
	// namespaces already created and labelled on this cluster.
	namespaces map[string]bool
}

// Handles reports whether the driver reaches k: SupervisorServices and
// Secrets on Supervisors.
func Handles(k target.Key) bool {
	return k.System == target.SystemSupervisor && (k.Kind == kindSupervisorService || k.Kind == kindSecret)
}

// restConfig finds how to reach a Supervisor.
func (cs *connections) restConfig(supervisor string) (*rest.Config, error) {
	if cs.cfg.RESTConfig != nil {
		return cs.cfg.RESTConfig(supervisor)
	}
	var file string
	if cs.cfg.KubeconfigFor != nil {
		file = cs.cfg.KubeconfigFor(supervisor)
	}
	if file == "" {
		file = cs.cfg.Kubeconfigs[supervisor]
	}
	if file == "" && cs.cfg.KubeconfigDir != "" {
		file = filepath.Join(cs.cfg.KubeconfigDir, supervisor+".kubeconfig")
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("supervisor %s has no kubeconfig: %s does not exist (add it to --kubeconfig-dir, or set the inventory Supervisor's kubeconfig): %w",
				supervisor, file, target.ErrUnreachable)
		}
	}
	if file == "" {
		return nil, fmt.Errorf("supervisor %s has no kubeconfig: set the inventory Supervisor's kubeconfig or put %s.kubeconfig in --kubeconfig-dir: %w",
			supervisor, supervisor, target.ErrUnreachable)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		return nil, fmt.Errorf("supervisor %s: kubeconfig %s: %w: %w", supervisor, file, err, target.ErrUnreachable)
	}
	return rc, nil
}

// cluster returns the clients of a Supervisor, connecting on first use.
func (cs *connections) cluster(supervisor string) (*cluster, error) {
	if supervisor == "" {
		return nil, fmt.Errorf("a Supervisor resource names no Supervisor: %w", target.ErrUnreachable)
	}
	cs.mu.Lock()
	if c, ok := cs.clusters[supervisor]; ok {
		cs.mu.Unlock()
		return c, nil
	}
	c, err := cs.connect(supervisor)
	w := cs.watching
	cs.mu.Unlock()
	if err == nil && w != nil {
		w.start(c)
	}
	return c, err
}

// connect builds a Supervisor's clients (cs.mu held).
func (cs *connections) connect(supervisor string) (*cluster, error) {
	rc, err := cs.restConfig(supervisor)
	if err != nil {
		return nil, err
	}
	rc = rest.CopyConfig(rc)
	// Activating a service writes a few objects per resource; the default
	// 5 QPS would make a 200-resource service take a minute.
	rc.QPS, rc.Burst = 500, 1000
	c := &cluster{name: supervisor, namespaces: map[string]bool{}}
	if c.dyn, err = dynamic.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("supervisor %s: %w: %w", supervisor, err, target.ErrUnreachable)
	}
	if c.kube, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("supervisor %s: %w: %w", supervisor, err, target.ErrUnreachable)
	}
	// Discovery answers quickly or not at all: bound it, so Facts and the
	// informers' start never hang on a dead Supervisor (watches are not
	// bounded: they are long requests by design).
	dc := rest.CopyConfig(rc)
	dc.Timeout = 10 * time.Second
	if c.discovery, err = discovery.NewDiscoveryClientForConfig(dc); err != nil {
		return nil, fmt.Errorf("supervisor %s: %w: %w", supervisor, err, target.ErrUnreachable)
	}
	cs.clusters[supervisor] = c
	return c, nil
}

// known lists the Supervisors with a kubeconfig.
func (cs *connections) known() []string {
	seen := map[string]bool{}
	var out []string
	for name := range cs.cfg.Kubeconfigs {
		seen[name] = true
		out = append(out, name)
	}
	if cs.cfg.KubeconfigDir != "" {
		matches, _ := filepath.Glob(filepath.Join(cs.cfg.KubeconfigDir, "*.kubeconfig"))
		for _, m := range matches {
			name := filepath.Base(m[:len(m)-len(".kubeconfig")])
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	cs.mu.Lock()
	for name := range cs.clusters {
		if !seen[name] {
			out = append(out, name)
		}
	}
	cs.mu.Unlock()
	return out
}

// unreachable wraps a transport failure as target.ErrUnreachable; API
// answers keep their meaning.
func unreachable(supervisor string, err error) error {
	if err == nil {
		return nil
	}
	if isAPIStatus(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("supervisor %s: %w: %w", supervisor, err, target.ErrUnreachable)
}
