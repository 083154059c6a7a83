package kubernetes

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

const (
	kindSupervisorService = "SupervisorService"
	kindSecret            = "Secret"
)

// Labels and annotations the driver writes on every object it owns.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedByValue = "vcfsm"
	// LabelService holds a hash of the owning service id (ids are URNs,
	// which label values cannot hold).
	LabelService = "vcfsm.dev/service"
	// LabelKey holds a hash of the target key: the objects of one resource.
	LabelKey = "vcfsm.dev/key"
	// LabelPart says which object of a resource this is.
	LabelPart = "vcfsm.dev/part"

	AnnotationServiceID    = "vcfsm.dev/service-id"
	AnnotationOwnerVersion = "vcfsm.dev/owner-version"
	AnnotationKey          = "vcfsm.dev/key"
	// AnnotationDesired holds the desired document on the resource's anchor
	// object, so Get reports it and notices drift of every part.
	AnnotationDesired    = "vcfsm.dev/desired"
	AnnotationGeneration = "vcfsm.dev/generation"
	AnnotationAdopted    = "vcfsm.dev/adopted"
	// AnnotationFinalizers lists the Service Manager's finalizers (as the
	// domain names them) among the object's finalizers.
	AnnotationFinalizers = "vcfsm.dev/finalizers"
)

// Parts of a resource.
const (
	partAnchor   = "anchor"
	partPackage  = "package"
	partMetadata = "package-metadata"
	partValues   = "values"
)

var (
	gvrSecret          = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrService         = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrPackage         = schema.GroupVersionResource{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packages"}
	gvrPackageMetadata = schema.GroupVersionResource{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packagemetadatas"}
	gvrPackageInstall  = schema.GroupVersionResource{Group: "packaging.carvel.dev", Version: "v1alpha1", Resource: "packageinstalls"}
)

// part is one Kubernetes object of a resource.
type part struct {
	role string
	gvr  schema.GroupVersionResource
	obj  *unstructured.Unstructured
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// k8sFinalizer names a domain finalizer on Kubernetes, where finalizers
// should be domain-qualified.
func k8sFinalizer(f string) string {
	if strings.Contains(f, "/") {
		return f
	}
	return "vcfsm.dev/" + f
}

// anchorGVR is where a resource's anchor lives.
func anchorGVR(k target.Key) schema.GroupVersionResource {
	if k.Kind == kindSupervisorService {
		return gvrPackageInstall
	}
	return gvrSecret
}

// secretName splits a Secret identity "<namespace>/<name>".
func secretName(k target.Key) (ns, name string, err error) {
	ns, name, ok := strings.Cut(k.Identity, "/")
	if !ok || ns == "" || name == "" {
		return "", "", fmt.Errorf("secret identity %q: want <namespace>/<name>: %w", k.Identity, target.ErrRejected)
	}
	return ns, name, nil
}

func mapAt(m map[string]any, path ...string) map[string]any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	out, _ := cur.(map[string]any)
	return out
}

// clone deep-copies a JSON document (and normalises its numbers).
func clone(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

// secretObject is the v1 Secret a Secret document becomes: stringData is
// folded into data, so what the cluster holds compares with what was sent.
func secretObject(doc map[string]any, ns, name string) (*unstructured.Unstructured, error) {
	data := map[string]any{}
	for k, v := range mapAt(doc, "data") {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("secret %s/%s: data.%s is not a string: %w", ns, name, k, target.ErrRejected)
		}
		data[k] = s
	}
	for k, v := range mapAt(doc, "stringData") {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("secret %s/%s: stringData.%s is not a string: %w", ns, name, k, target.ErrRejected)
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": docMeta(doc, ns, name), "data": data}
	if t := target.StringAt(doc, "type"); t != "" {
		obj["type"] = t
	}
	if im, ok := doc["immutable"].(bool); ok {
		obj["immutable"] = im
	}
	return &unstructured.Unstructured{Object: obj}, nil
}

// docMeta keeps a document's labels and annotations (a SupervisorService's
// values selector finds Secrets by their labels) under the given name.
func docMeta(doc map[string]any, ns, name string) map[string]any {
	meta := map[string]any{"name": name, "namespace": ns}
	if l := mapAt(doc, "metadata", "labels"); len(l) > 0 {
		meta["labels"] = clone(l)
	}
	if a := mapAt(doc, "metadata", "annotations"); len(a) > 0 {
		meta["annotations"] = clone(a)
	}
	return meta
}

// ssNames are the object names of a SupervisorService.
type ssNames struct {
	refName, version, pkg, pkgm, install string
}

func supervisorServiceNames(doc map[string]any) (ssNames, error) {
	n := ssNames{refName: target.StringAt(doc, "spec", "package", "spec", "refName"), version: target.StringAt(doc, "spec", "package", "spec", "version")}
	if n.refName == "" || n.version == "" {
		return n, fmt.Errorf("SupervisorService: spec.package.spec.refName and spec.package.spec.version are required: %w", target.ErrRejected)
	}
	n.pkg = target.StringAt(doc, "spec", "package", "metadata", "name")
	if n.pkg == "" {
		n.pkg = n.refName + "." + n.version
	}
	n.pkgm = target.StringAt(doc, "spec", "packageMetadata", "metadata", "name")
	if n.pkgm == "" {
		n.pkgm = n.refName
	}
	n.install = n.refName
	return n, nil
}

// ValuesSecretName is the name of a SupervisorService's values Secret:
// <refName>-values-<hash of the values>. A values change is a new name, so
// the PackageInstall's spec changes with it and its generation moves:
// kapp-controller's verdict on the old values can no longer pass for one
// on the new (health waits for the generation this apply wrote).
// A refName too long to leave room for the suffix is cut (Secret names
// are DNS subdomains of at most 253 characters; the cut ends on a letter
// or digit so the name stays one).
func ValuesSecretName(refName string, values []byte) string {
	const suffix = "-values-"
	const maxPrefix = 253 - len(suffix) - 10
	if len(refName) > maxPrefix {
		refName = strings.TrimRight(refName[:maxPrefix], ".-")
	}
	return refName + suffix + hashOf(string(values))[:10]
}

// carvelObject re-homes an embedded Package or PackageMetadata into
// data.packaging.carvel.dev in the service's namespace.
func carvelObject(embedded map[string]any, kind, ns, name string) *unstructured.Unstructured {
	obj := map[string]any{"apiVersion": gvrPackage.GroupVersion().String(), "kind": kind,
		"metadata": docMeta(embedded, ns, name), "spec": clone(mapAt(embedded, "spec"))}
	if obj["spec"] == nil {
		obj["spec"] = map[string]any{}
	}
	return &unstructured.Unstructured{Object: obj}
}

// supervisorServiceParts builds what a SupervisorService becomes; values
// is the resolved values YAML, nil when the document selects none.
func supervisorServiceParts(doc map[string]any, ns string, values []byte) ([]part, error) {
	n, err := supervisorServiceNames(doc)
	if err != nil {
		return nil, err
	}
	if mapAt(doc, "spec", "packageMetadata") == nil {
		return nil, fmt.Errorf("SupervisorService %s: spec.packageMetadata is required: %w", n.refName, target.ErrRejected)
	}
	parts := []part{
		{role: partMetadata, gvr: gvrPackageMetadata, obj: carvelObject(mapAt(doc, "spec", "packageMetadata"), "PackageMetadata", ns, n.pkgm)},
		{role: partPackage, gvr: gvrPackage, obj: carvelObject(mapAt(doc, "spec", "package"), "Package", ns, n.pkg)},
	}
	spec := map[string]any{
		"serviceAccountName": installerAccount,
		"packageRef": map[string]any{"refName": n.refName,
			"versionSelection": map[string]any{"constraints": n.version, "prereleases": map[string]any{}}},
	}
	if values != nil {
		name := ValuesSecretName(n.refName, values)
		vs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"data":     map[string]any{"values.yaml": base64.StdEncoding.EncodeToString(values)}}}
		parts = append(parts, part{role: partValues, gvr: gvrSecret, obj: vs})
		spec["values"] = []any{map[string]any{"secretRef": map[string]any{"name": name}}}
	}
	install := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvrPackageInstall.GroupVersion().String(), "kind": "PackageInstall",
		"metadata": map[string]any{"name": n.install, "namespace": ns}, "spec": spec}}
	return append(parts, part{role: partAnchor, gvr: gvrPackageInstall, obj: install}), nil
}

// ownership stamps the owner on a part; the anchor also gets the desired
// document, generation, adoption mark and finalizers.
type ownership struct {
	key        target.Key
	owner      target.Owner
	finalizers []string
	desired    string
	generation int64
	adopted    bool
}

func (o ownership) stamp(p part) {
	meta := p.obj.Object["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	labels[LabelManagedBy] = managedByValue
	if !o.owner.IsZero() {
		labels[LabelService] = hashOf(o.owner.ServiceID)
	}
	labels[LabelKey] = hashOf(o.key.String())
	labels[LabelPart] = p.role
	meta["labels"] = labels
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	if !o.owner.IsZero() {
		ann[AnnotationServiceID] = o.owner.ServiceID
		ann[AnnotationOwnerVersion] = o.owner.Version
	}
	ann[AnnotationKey] = o.key.String()
	if p.role == partAnchor {
		ann[AnnotationDesired] = o.desired
		ann[AnnotationGeneration] = fmt.Sprint(o.generation)
		if o.adopted {
			ann[AnnotationAdopted] = "true"
		}
		fin, _ := json.Marshal(o.finalizers)
		ann[AnnotationFinalizers] = string(fin)
		var k8s []any
		for _, f := range o.finalizers {
			k8s = append(k8s, k8sFinalizer(f))
		}
		if len(k8s) > 0 {
			meta["finalizers"] = k8s
		}
	}
	meta["annotations"] = ann
}

// ownFinalizers reads the domain finalizers an object carries.
func ownFinalizers(u *unstructured.Unstructured) []string {
	var fin []string
	if raw := u.GetAnnotations()[AnnotationFinalizers]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &fin)
	}
	present := u.GetFinalizers()
	var out []string
	for _, f := range fin {
		if slices.Contains(present, k8sFinalizer(f)) {
			out = append(out, f)
		}
	}
	return out
}

// ownerOf reads the owner of an object.
func ownerOf(u *unstructured.Unstructured) target.Owner {
	a := u.GetAnnotations()
	return target.Owner{ServiceID: a[AnnotationServiceID], Version: a[AnnotationOwnerVersion]}
}
