package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// RequestsAnnotation lets a SupervisorService document declare what it
// consumes on its Supervisor ("cpu=2000m,memory=4Gi,storage=20Gi"); without
// it DefaultRequest applies. Packages carry no resource requests of their
// own, so this is the pre-check's estimate.
const RequestsAnnotation = "vcfsm.dev/requests"

// DefaultRequest is what a SupervisorService consumes by default.
var DefaultRequest = simulator.DefaultRequest

// CapacityLabel marks ResourceQuotas that cap what the Service Manager may
// place on a cluster; without one, capacity is the nodes' allocatable.
const CapacityLabel = "vcfsm.dev/capacity"

// stager answers the dynamic pre-checks: Stage (a server-side dry run),
// Facts and KubernetesVersion.
type stager struct {
	conns  *connections
	writer *writer
}

// stage dry-runs every object the resource becomes.
func (sg *stager) stage(ctx context.Context, want target.Desired) (target.Staged, error) {
	st := target.Staged{Reachable: true}
	if want.Kind == kindSupervisorService {
		q, err := requests(want.Spec)
		if err != nil {
			return target.Staged{}, fmt.Errorf("stage %s: %w", want.Key, err)
		}
		st.Requested = q
	}
	c, err := sg.conns.cluster(want.Scope)
	if err != nil {
		return target.Staged{Reachable: false, Message: err.Error(), Requested: st.Requested}, nil
	}
	r := &resource{c: c, ns: want.Namespace}
	if want.Kind == kindSecret {
		if r.ns, _, err = secretName(want.Key); err != nil {
			return rejected(st, err), nil
		}
	}
	// The namespace may not exist before activation and a dry run creates
	// nothing: validate in "default" then (same schemas and rules).
	if r.ns == "" {
		r.ns = "default"
	} else if _, err := c.kube.CoreV1().Namespaces().Get(ctx, r.ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		r.ns = "default"
	} else if err != nil {
		return target.Staged{Reachable: false, Message: unreachable(want.Scope, err).Error(), Requested: st.Requested}, nil
	}
	parts, err := stagedParts(want, r.ns)
	if err != nil {
		return rejected(st, err), nil
	}
	own := ownership{key: want.Key, owner: want.Owner, finalizers: want.Finalizers, desired: "{}", generation: 1}
	if _, err := sg.writer.applyParts(ctx, c, parts, own, false, true); err != nil {
		if errors.Is(err, target.ErrUnreachable) {
			return target.Staged{Reachable: false, Message: err.Error(), Requested: st.Requested}, nil
		}
		return rejected(st, err), nil
	}
	st.Message = fmt.Sprintf("server-side dry run of %d object(s) accepted by the Kubernetes API server", len(parts))
	return st, nil
}

func rejected(st target.Staged, err error) target.Staged {
	st.Rejected = true
	st.Message = "rejected by the Kubernetes API server dry run: " + err.Error()
	return st
}

// stagedParts builds the objects without reading the cluster: values are
// resolved at apply time, a placeholder stands in.
func stagedParts(want target.Desired, ns string) ([]part, error) {
	if want.Kind == kindSecret {
		_, name, err := secretName(want.Key)
		if err != nil {
			return nil, err
		}
		s, err := secretObject(want.Spec, ns, name)
		if err != nil {
			return nil, err
		}
		return []part{{role: partAnchor, gvr: gvrSecret, obj: s}}, nil
	}
	var values []byte
	if mapAt(want.Spec, "spec", "values", "selector") != nil {
		values = []byte{}
	}
	return supervisorServiceParts(want.Spec, ns, values)
}

func requests(doc map[string]any) (target.Quota, error) {
	spec := target.StringAt(doc, "metadata", "annotations", RequestsAnnotation)
	if spec == "" {
		return DefaultRequest, nil
	}
	q, err := simulator.ParseQuota(spec)
	if err != nil {
		return target.Quota{}, fmt.Errorf("annotation %s: %w", RequestsAnnotation, err)
	}
	return q, nil
}

// facts reports each named Supervisor's reachability, Kubernetes version,
// capacity and the APIs discovery reports.
func (sg *stager) facts(ctx context.Context, supervisors []string) target.Facts {
	var f target.Facts
	for _, name := range supervisors {
		f.Supervisors = append(f.Supervisors, sg.supervisorFacts(ctx, name))
	}
	return f
}

// SupervisorServiceAPI is what the Service Manager's SupervisorService
// needs a cluster to serve: kapp-controller's APIs.
var SupervisorServiceAPI = []string{"data.packaging.carvel.dev/v1alpha1/Package", "data.packaging.carvel.dev/v1alpha1/PackageMetadata", "packaging.carvel.dev/v1alpha1/PackageInstall"}

func (sg *stager) supervisorFacts(ctx context.Context, name string) target.SupervisorFacts {
	sf := target.SupervisorFacts{Name: name}
	c, err := sg.conns.cluster(name)
	if err != nil {
		return sf
	}
	v, err := c.discovery.ServerVersion()
	if err != nil {
		return sf
	}
	sf.Reachable, sf.KubernetesVersion = true, v.GitVersion
	_, lists, _ := c.discovery.ServerGroupsAndResources()
	for _, l := range lists {
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				sf.SupportedAPIs = append(sf.SupportedAPIs, l.GroupVersion+"/"+r.Kind)
			}
		}
	}
	slices.Sort(sf.SupportedAPIs)
	servesKapp := true
	for _, api := range SupervisorServiceAPI {
		servesKapp = servesKapp && slices.Contains(sf.SupportedAPIs, api)
	}
	if servesKapp {
		sf.SupportedAPIs = append(sf.SupportedAPIs, "services.vcfa.broadcom.com/v2/SupervisorService")
	}
	sf.Available = capacity(ctx, c)
	return sf
}

// capacity is what labelled ResourceQuotas leave (hard − used), or else
// the sum of the nodes' allocatable.
func capacity(ctx context.Context, c *cluster) target.Quota {
	quotas, err := c.kube.CoreV1().ResourceQuotas("").List(ctx, metav1.ListOptions{LabelSelector: CapacityLabel})
	if err == nil && len(quotas.Items) > 0 {
		var q target.Quota
		for _, rq := range quotas.Items {
			left := func(n corev1.ResourceName) kresource.Quantity {
				h := rq.Status.Hard[n]
				if h.IsZero() {
					h = rq.Spec.Hard[n]
				}
				h.Sub(rq.Status.Used[n])
				return h
			}
			cpu, mem, sto := left(corev1.ResourceRequestsCPU), left(corev1.ResourceRequestsMemory), left(corev1.ResourceRequestsStorage)
			q.CPUMillicores += cpu.MilliValue()
			q.MemoryBytes += mem.Value()
			q.StorageBytes += sto.Value()
		}
		return q
	}
	var q target.Quota
	nodes, err := c.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return q
	}
	for _, n := range nodes.Items {
		cpu, mem, sto := n.Status.Allocatable[corev1.ResourceCPU], n.Status.Allocatable[corev1.ResourceMemory], n.Status.Allocatable[corev1.ResourceEphemeralStorage]
		q.CPUMillicores += cpu.MilliValue()
		q.MemoryBytes += mem.Value()
		q.StorageBytes += sto.Value()
	}
	return q
}

// kubernetesVersion is a Supervisor's Kubernetes version (/version).
func (sg *stager) kubernetesVersion(supervisor string) (string, error) {
	c, err := sg.conns.cluster(supervisor)
	if err != nil {
		return "", err
	}
	v, err := c.discovery.ServerVersion()
	if err != nil {
		return "", unreachable(supervisor, err)
	}
	return v.GitVersion, nil
}
