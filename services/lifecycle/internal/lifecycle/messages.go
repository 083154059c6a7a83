package lifecycle

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// What the peer ports (ports.go) carry, in the domain's own types: the
// adapters in internal/peers translate them to the generated messages.

// Document is one rendered custom resource document.
type Document struct {
	APIVersion string
	Kind       string
	Name       string
	Labels     map[string]string
	Region     string
	Supervisor string
	YAML       []byte
	// Index is the document's position in the render.
	Index int
}

// CheckResult is one compatibility or hook finding.
type CheckResult struct {
	// Severity is ERROR, WARNING or INFO.
	Severity       string
	Kind           string
	Expression     string
	CheckedVersion string
	Subject        string
	Message        string
	Source         string
}

// ValueLayers are the inputs of a render besides the bundle.
type ValueLayers struct {
	Inventory       *Inventory
	PlatformOverlay string
	VendorOverlay   string
	UserOverwrite   string
}

// RenderRequest asks the renderer for one render of a bundle.
type RenderRequest struct {
	Bundle *bundle.Bundle
	Values ValueLayers
	// Expanded and Provenance shape an effective-values render.
	Expanded   bool
	Provenance bool
}

// Rendering is a bundle's custom resources rendered.
type Rendering struct {
	Documents []*Document
	YAML      []byte
	Effective []byte
}

// EffectiveValues are a bundle's effective values rendered.
type EffectiveValues struct {
	YAML       []byte
	Provenance []Provenance
}

// Provenance is the layer that set one leaf of the effective values.
type Provenance struct {
	Path, Layer, Value string
}

// OverlayRequest asks the renderer to transform a runtime spec with an
// Overlay (runtime-spec.md).
type OverlayRequest struct {
	RuntimeSpecYAML []byte
	Overlay         string
	// Values are the Overlay's resolved data values; nil when the Overlay
	// is unknown.
	Values       map[string]any
	Mode         string
	OverlayReady bool
	OverlayName  string
}

// OverlayResult is the renderer's answer to an OverlayRequest.
type OverlayResult struct {
	RuntimeSpecYAML []byte
	Applied         bool
	Status          string
	Message         string
}

// Constraints are a package's version constraints.
type Constraints struct {
	SupervisorVersion  string
	KubernetesVersion  string
	SourceUpgrade      string
	DestinationUpgrade string
}

// PackageVersion is the compatibility service's view of a bundle.
type PackageVersion struct {
	Name        string
	Version     string
	Constraints Constraints
	BuiltIn     bool
}

// Environment is one Supervisor a package runs (or would run) on.
type Environment struct {
	Supervisor        string
	SupervisorVersion string
	KubernetesVersion string
}

// PackageValidation asks for a package's validation and static checks.
type PackageValidation struct {
	PackageYAML []byte
	Documents   []*Document
	BuiltIn     bool
}

// Validation is the outcome of a PackageValidation.
type Validation struct {
	Valid  bool
	Issues []ValidationIssue
}

// ValidationIssue is one reason a package is invalid.
type ValidationIssue struct {
	Kind, Source, Expression, Message string
}

// Verdict is the compatibility service's verdict on one package.
type Verdict struct {
	Blocked bool
	Results []CheckResult
}

// PathRequest asks for a legal chain of versions to a target version.
type PathRequest struct {
	Installed     PackageVersion
	Available     []PackageVersion
	TargetVersion string
	Environments  []Environment
}

// HookRequest dispatches a service's pre-check hook on one Supervisor.
type HookRequest struct {
	SourcePackageYAML []byte
	TargetPackageYAML []byte
	Namespace         string
	// Secrets are the service namespace's Secrets on the Supervisor, by
	// name (the hook's _ca_secret is looked up there).
	Secrets       map[string]map[string][]byte
	ServiceName   string
	SourceVersion string
	TargetVersion string
	Supervisor    string
}

// HookResult is one hook dispatch's outcome.
type HookResult struct {
	Configured bool
	Endpoint   string
	Results    []CheckResult
	Failure    string
	Blocked    bool
	HTTPStatus int
	Supervisor string
}

// PrecheckRequest asks for the dynamic pre-checks of a render.
type PrecheckRequest struct {
	Documents []*Document
	Bundle    BundleFacts
	Platform  PlatformFacts
	Staged    []StagedResource
}

// BundleFacts are what the pre-checks need of a bundle.
type BundleFacts struct {
	ImagesLock          []byte
	BundledImageDigests []string
	RegistryRepository  string
	PluginManifests     map[string][]byte
}

// PlatformFacts are the targets' facts the pre-checks evaluate against.
type PlatformFacts struct {
	VCFAVersion string
	Supervisors []SupervisorFacts
	Targets     []TargetFacts
}

// TargetFacts are a system target's supported APIs.
type TargetFacts struct {
	Name                 string
	SupportedAPIVersions []string
}

// SupervisorFacts are one Supervisor's versions, capacity and APIs.
type SupervisorFacts struct {
	Name                 string
	Version              string
	KubernetesVersion    string
	Available            target.Quota
	SupportedAPIVersions []string
}

// StagedResource is how a target took one rendered document's dry run.
type StagedResource struct {
	// Index is the document's Index.
	Index     int
	Target    string
	Reachable bool
	Message   string
	Requested target.Quota
	Rejected  bool
}
