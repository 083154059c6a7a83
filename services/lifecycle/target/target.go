// Package target is the boundary between the lifecycle service and the
// systems a VCF Service's resources live on: Supervisor clusters, vCenter
// and VCF Automation. Controllers talk to them only through Driver.
//
// The real systems are not reachable from this project's machines; the
// shipped implementation is a simulator (package simulator). Every Driver
// must pass targettest.Run.
package target

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Systems a resource can live on.
const (
	SystemSupervisor = "supervisor"
	SystemVCenter    = "vcenter"
	SystemVCFA       = "vcfa"
	// SystemServiceManager holds resources the Service Manager reconciles
	// itself (Overlay).
	SystemServiceManager = "servicemanager"
)

// Resource statuses (element-types overview "Status Values").
const (
	StatusHealthy     = "Healthy"
	StatusBusy        = "Busy"
	StatusUnhealthy   = "Unhealthy"
	StatusMaintenance = "Maintenance"
)

// Errors a driver returns; wrap them with context.
var (
	ErrNotFound = errors.New("target resource not found")
	// ErrUnreachable: the target system could not be reached.
	ErrUnreachable = errors.New("target unreachable")
	// ErrOwnedByOther: the resource exists and another service owns it.
	ErrOwnedByOther = errors.New("target resource owned by another service")
	// ErrIncompatible: an existing resource cannot be adopted.
	ErrIncompatible = errors.New("existing target resource is not compatible")
	// ErrRejected: the target refused the operation (e.g. an injected fault).
	ErrRejected = errors.New("target rejected the operation")
)

// Key identifies a resource on its target: the system, the scope within it
// (a Supervisor or vCenter name; empty for VCF Automation), the kind and
// the identity the target itself uses (a role's name, a service account's
// client name, a Supervisor Service's package refName…).
type Key struct {
	System   string `json:"system"`
	Scope    string `json:"scope,omitempty"`
	Kind     string `json:"kind"`
	Identity string `json:"identity"`
}

// String is a stable, unique rendering of the key.
func (k Key) String() string {
	return k.System + "/" + k.Scope + "/" + k.Kind + "/" + k.Identity
}

// Owner is the service version that owns a resource on its target.
type Owner struct {
	ServiceID string `json:"serviceId,omitempty"`
	Version   string `json:"version,omitempty"`
}

// IsZero reports an unowned resource.
func (o Owner) IsZero() bool { return o.ServiceID == "" }

// Desired is what a controller wants on a target.
type Desired struct {
	Key
	// Namespace on a Supervisor (svc-<name>) for Supervisor resources.
	Namespace string `json:"namespace,omitempty"`
	// Spec is the rendered document (runtime spec), JSON-compatible.
	Spec       map[string]any `json:"spec"`
	Owner      Owner          `json:"owner"`
	Finalizers []string       `json:"finalizers,omitempty"`
}

// Object is a resource as its target reports it.
type Object struct {
	Key
	Namespace  string         `json:"namespace,omitempty"`
	Spec       map[string]any `json:"spec"`
	Owner      Owner          `json:"owner"`
	Finalizers []string       `json:"finalizers,omitempty"`
	Status     string         `json:"status"`
	Message    string         `json:"message,omitempty"`
	// Adopted is true when the resource existed before a service took
	// ownership of it.
	Adopted    bool      `json:"adopted,omitempty"`
	ExternalID string    `json:"externalId,omitempty"`
	Generation int64     `json:"generation"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// ReadyConditions are resolved ready-condition values
	// (SupervisorService status.readyConditions).
	ReadyConditions map[string]string `json:"readyConditions,omitempty"`
}

// Quota is an amount of compute and storage.
type Quota struct {
	CPUMillicores int64 `json:"cpuMillicores"`
	MemoryBytes   int64 `json:"memoryBytes"`
	StorageBytes  int64 `json:"storageBytes"`
}

// Fits reports whether q fits in available.
func (q Quota) Fits(available Quota) bool {
	return q.CPUMillicores <= available.CPUMillicores && q.MemoryBytes <= available.MemoryBytes && q.StorageBytes <= available.StorageBytes
}

// Staged is a target's answer to a dry run of a resource.
type Staged struct {
	Reachable bool   `json:"reachable"`
	Message   string `json:"message,omitempty"`
	// Rejected is true when the target refused the dry run (its own
	// validation: schemas, admission); Message says why.
	Rejected bool `json:"rejected,omitempty"`
	// Requested is what the resource will consume on its Supervisor.
	Requested Quota `json:"requested"`
}

// Facts describe the platform as the targets report it.
type Facts struct {
	VCFAVersion string            `json:"vcfaVersion"`
	Supervisors []SupervisorFacts `json:"supervisors"`
	// SupportedAPIs of VCF Automation, vCenters and the Service Manager,
	// "<apiVersion>/<kind>".
	SupportedAPIs []string `json:"supportedApis"`
}

// SupervisorFacts describe one Supervisor.
type SupervisorFacts struct {
	Name      string `json:"name"`
	Reachable bool   `json:"reachable"`
	Available Quota  `json:"available"`
	// KubernetesVersion as the Supervisor reports it (/version); empty
	// when the driver cannot tell (the inventory's then applies).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// SupportedAPIs lists "<apiVersion>/<kind>" the Supervisor's service
	// manager accepts.
	SupportedAPIs []string `json:"supportedApis"`
}

// Driver reaches the target systems.
type Driver interface {
	// Apply creates the resource, or adopts an existing unowned compatible
	// one (declaring ownership and reconciling drift), or updates one the
	// same service owns. It returns the object as the target now reports it.
	Apply(ctx context.Context, d Desired) (Object, error)
	// Get reads a resource.
	Get(ctx context.Context, k Key) (Object, error)
	// Transfer changes owner and finalizers without touching the spec
	// (ownership transfer during upgrades and rollbacks).
	Transfer(ctx context.Context, k Key, owner Owner, finalizers []string) (Object, error)
	// Delete removes the resource from its target (finalizer cleanup).
	Delete(ctx context.Context, k Key) error
	// Release drops ownership and leaves the resource on its target
	// (resources without finalizers).
	Release(ctx context.Context, k Key) error
	// Stage dry-runs a resource for the dynamic pre-checks.
	Stage(ctx context.Context, d Desired) (Staged, error)
	// Facts reports platform versions and the capacity of the named
	// Supervisors (known to the target or not).
	Facts(ctx context.Context, supervisors []string) (Facts, error)
	// Secrets returns the data of the Secrets in a Supervisor namespace.
	Secrets(ctx context.Context, supervisor, namespace string) (map[string]map[string][]byte, error)
	// List returns every resource a service owns.
	List(ctx context.Context, serviceID string) ([]Object, error)
}

// Change is a change on a target, as a ChangeFeed reports it.
type Change struct {
	Key Key
	// ServiceID owns the object (before or after the change); empty when
	// the change may concern any service (a target's facts or faults
	// changed).
	ServiceID string
}

// ChangeFeed is implemented by drivers that report the changes on their
// targets, whoever made them (a watch). With one, controllers react to
// changes instead of re-reading quiet services.
type ChangeFeed interface {
	// Watch calls fn with every change until ctx ends; fn must not block.
	Watch(ctx context.Context, fn func(Change))
}

// Watcher is implemented by drivers that watch their targets: Watch calls
// changed with the owning service's id whenever an object a service owns
// changes or disappears on its target other than by the driver's own
// writes, until ctx ends. The controllers then reconcile that service.
type Watcher interface {
	Watch(ctx context.Context, changed func(serviceID string)) error
}

// SecretIdentity is the identity of a Secret in a Supervisor namespace:
// names are only unique within a namespace.
func SecretIdentity(namespace, name string) string { return namespace + "/" + name }

// Placement says where a rendered document lives on the targets.
type Placement struct {
	System   string
	Identity string
	// PerSupervisor is true for documents that carry no Supervisor of their
	// own but go to every Supervisor the service targets (Secrets).
	PerSupervisor bool
}

// Place maps a rendered document to its target system and identity, per
// the element-type docs: Supervisor kinds go to spec.supervisor, vCenter
// service accounts to their vCenter, RBAC/UI/API/OAuth kinds to VCF
// Automation, Overlays stay with the Service Manager.
func Place(kind string, doc map[string]any, name string) (Placement, error) {
	spec, _ := doc["spec"].(map[string]any)
	str := func(path ...string) string { return StringAt(spec, path...) }
	p := Placement{}
	switch kind {
	case "SupervisorService":
		p.System, p.Identity = SystemSupervisor, str("package", "spec", "refName")
	case "SupervisorRegistry":
		p.System, p.Identity = SystemSupervisor, str("endpoint")
	case "Secret":
		p.System, p.PerSupervisor = SystemSupervisor, true
		meta, _ := doc["metadata"].(map[string]any)
		p.Identity = StringAt(meta, "name")
	case "VcServiceAccount":
		p.System, p.Identity = SystemVCenter, str("username")
	case "GlobalRole", "Role", "RightBundle", "RelyingParty":
		p.System, p.Identity = SystemVCFA, str("name")
	case "VcfaServiceAccount":
		p.System, p.Identity = SystemVCFA, str("clientName")
	case "ApiExtension", "ApiExtensionProxy":
		p.System = SystemVCFA
		if n := str("name"); n != "" {
			p.Identity = strings.Join([]string{str("vendor"), n, str("version")}, "/")
		}
	case "UserInterfacePlugin", "RdeBundle":
		p.System = SystemVCFA
		// The repository, without tag or digest: a new version of the same
		// plugin replaces the old one.
		img := str("image")
		if i := strings.Index(img, "@"); i >= 0 {
			img = img[:i]
		}
		if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
			img = img[:i]
		}
		p.Identity = img
	case "Overlay":
		p.System = SystemServiceManager
	default:
		return Placement{}, fmt.Errorf("kind %q has no target", kind)
	}
	if p.Identity == "" {
		p.Identity = name
	}
	if p.Identity == "" {
		return Placement{}, fmt.Errorf("%s has no identity: set the services.vcfa.broadcom.com/name label", kind)
	}
	return p, nil
}

// StringAt is the string at path in a decoded document, "" when the path
// is missing or holds something else.
func StringAt(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}
