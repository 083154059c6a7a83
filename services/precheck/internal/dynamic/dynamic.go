// Package dynamic runs the per-resource dynamic pre-checks of seed 002
// ("Dynamic checks"): every rendered resource, as staged on its target, is
// checked against the facts the lifecycle service gathered (bundle
// contents, platform versions, what each target reported), and the checks
// are aggregated into {preCheckStatus, resourceChecks[...]}.
//
// Which checks run:
//
//	every kind           Staging (when staged), SchemaValidation
//	all but Secret       ApiCompatibility
//	SupervisorService    PackageManifest, ImageAvailability, ResourceQuota
//	UserInterfacePlugin  PluginManifest, BinaryCompatibility, PluginCompatibility
//
// The checks that need the target (ApiCompatibility, ResourceQuota) are
// left out when the target was unreachable; the failed Staging check says
// why.
package dynamic

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// Check and resource statuses (seed 002).
const (
	StatusPassed  = "Passed"
	StatusWarning = "Warning"
	StatusFailed  = "Failed"
)

// Check names.
const (
	CheckStaging             = "Staging"
	CheckSchemaValidation    = "SchemaValidation"
	CheckAPICompatibility    = "ApiCompatibility"
	CheckPackageManifest     = "PackageManifest"
	CheckImageAvailability   = "ImageAvailability"
	CheckResourceQuota       = "ResourceQuota"
	CheckPluginManifest      = "PluginManifest"
	CheckBinaryCompatibility = "BinaryCompatibility"
	// CheckPluginCompatibility is the VCF Automation version check; seed
	// 002's example report names it so.
	CheckPluginCompatibility = "PluginCompatibility"
)

// ErrInvalidInput marks a request that breaks the RPC's contract.
var ErrInvalidInput = errors.New("invalid dynamic pre-check request")

// DefaultRegistryTimeout bounds the registry look-ups of one run.
const DefaultRegistryTimeout = 30 * time.Second

// Options configure a Checker.
type Options struct {
	// RegistryTimeout bounds the image look-ups of one run; 0 means
	// DefaultRegistryTimeout.
	RegistryTimeout time.Duration
	// RegistryOptions are passed to every go-containerregistry call;
	// nil means the default keychain (docker config, credential helpers).
	RegistryOptions []remote.Option
	// Observer, when set, is told every check's name and status (metrics).
	Observer func(check, status string)
}

// Checker runs dynamic pre-checks. It is safe for concurrent use.
type Checker struct {
	registryTimeout time.Duration
	registryOpts    []remote.Option
	observe         func(check, status string)
}

// NewChecker builds a Checker.
func NewChecker(opts Options) *Checker {
	c := &Checker{registryTimeout: opts.RegistryTimeout, registryOpts: opts.RegistryOptions, observe: opts.Observer}
	if c.registryTimeout <= 0 {
		c.registryTimeout = DefaultRegistryTimeout
	}
	if c.registryOpts == nil {
		c.registryOpts = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	}
	return c
}

// resource is one request resource with its parsed document.
type resource struct {
	pos        int // in the request
	res        *commonv1.Resource
	doc        map[string]any
	apiVersion string
	kind       string
	name       string
	staged     *precheckv1.StagedResource // nil when not staged
}

func (r *resource) String() string {
	return fmt.Sprintf("resources[%d] (%s %s)", r.pos, r.kind, r.name)
}

// supervisor is the spec.supervisor of kinds that target one.
func (r *resource) supervisor() string {
	s, _ := str(r.doc, "spec", "supervisor")
	return s
}

// reachable is false only when the target said so.
func (r *resource) reachable() bool { return r.staged == nil || r.staged.GetReachable() }

// run is the state of one Run call.
type run struct {
	c      *Checker
	req    *precheckv1.RunDynamicPrechecksRequest
	images *commonv1.Check // ImageAvailability, computed once per run
	// requested sums the quota the run's SupervisorServices request, by
	// Supervisor.
	requested map[string]*precheckv1.ResourceQuota
}

// Run checks every resource and aggregates the report. Only a request
// that breaks the contract is an error (ErrInvalidInput); everything the
// checks find is in the report.
func (c *Checker) Run(ctx context.Context, req *precheckv1.RunDynamicPrechecksRequest) (*commonv1.PreCheckReport, error) {
	resources, err := parseResources(req)
	if err != nil {
		return nil, err
	}
	r := &run{c: c, req: req, requested: map[string]*precheckv1.ResourceQuota{}}
	for _, res := range resources {
		if res.kind == kindSupervisorService && res.reachable() && res.staged != nil {
			r.addRequested(res.supervisor(), res.staged.GetRequested())
		}
	}
	report := &commonv1.PreCheckReport{PreCheckStatus: StatusPassed, ResourceChecks: []*commonv1.ResourceCheck{}}
	for _, res := range resources {
		rc := &commonv1.ResourceCheck{Type: res.kind, Name: res.name, Supervisor: res.supervisor(), Checks: r.checks(ctx, res)}
		rc.Status = worst(rc.Checks)
		if c.observe != nil {
			for _, ch := range rc.Checks {
				c.observe(ch.GetName(), ch.GetStatus())
			}
		}
		if rc.Status == StatusFailed {
			report.PreCheckStatus = StatusFailed
		}
		report.ResourceChecks = append(report.ResourceChecks, rc)
	}
	return report, nil
}

// checks runs the checks of one resource, in report order.
func (r *run) checks(ctx context.Context, res *resource) []*commonv1.Check {
	var out []*commonv1.Check
	if res.staged != nil {
		out = append(out, stagingCheck(res))
	}
	out = append(out, schemaCheck(res))
	if res.kind == kindSecret {
		return out
	}
	if res.reachable() {
		out = append(out, r.apiCheck(res))
	}
	switch res.kind {
	case kindSupervisorService:
		out = append(out, packageManifestCheck(res), r.imageCheck(ctx))
		if res.reachable() {
			out = append(out, r.quotaCheck(res))
		}
	case kindUserInterfacePlugin:
		m, mc := r.pluginManifestCheck(res)
		out = append(out, mc, binaryCompatibilityCheck(m, r.req.GetPlatform().GetVcfaVersion()), vcfaVersionCheck(m, r.req.GetPlatform().GetVcfaVersion()))
	}
	return out
}

func stagingCheck(res *resource) *commonv1.Check {
	target := res.staged.GetTarget()
	if target == "" {
		target = "its target"
	}
	if !res.staged.GetReachable() {
		msg := fmt.Sprintf("target %s is unreachable; the checks that need it were not run", target)
		if m := res.staged.GetMessage(); m != "" {
			msg = fmt.Sprintf("target %s is unreachable: %s; the checks that need it were not run", target, m)
		}
		return failed(CheckStaging, msg)
	}
	if res.staged.GetRejected() {
		return failed(CheckStaging, fmt.Sprintf("%s refused the dry run: %s", target, res.staged.GetMessage()))
	}
	msg := "staged on " + target
	if m := res.staged.GetMessage(); m != "" {
		msg += ": " + m
	}
	return passed(CheckStaging, msg)
}

// parseResources reads the request's resources and pairs them with their
// staging facts.
// parseDocs parses every resource's YAML, on every core (a big service
// renders thousands of documents).
func parseDocs(res []*commonv1.Resource) ([]map[string]any, []error) {
	docs := make([]map[string]any, len(res))
	errs := make([]error, len(res))
	workers := min(runtime.GOMAXPROCS(0), len(res)/64+1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(res); i += workers {
				errs[i] = yaml.Unmarshal(res[i].GetYaml(), &docs[i])
			}
		})
	}
	wg.Wait()
	return docs, errs
}

func parseResources(req *precheckv1.RunDynamicPrechecksRequest) ([]*resource, error) {
	docs, errs := parseDocs(req.GetResources())
	out := make([]*resource, 0, len(req.GetResources()))
	byIndex := map[int32]*resource{}
	for i, res := range req.GetResources() {
		if res == nil {
			return nil, fmt.Errorf("%w: resources[%d] is empty", ErrInvalidInput, i)
		}
		r := &resource{pos: i, res: res, kind: res.GetKind(), name: res.GetName()}
		if len(strings.TrimSpace(string(res.GetYaml()))) == 0 {
			return nil, fmt.Errorf("%w: %s: yaml is empty: send the document as rendered", ErrInvalidInput, r)
		}
		if err := errs[i]; err != nil {
			return nil, fmt.Errorf("%w: %s: yaml: %w", ErrInvalidInput, r, err)
		}
		r.doc = docs[i]
		if r.doc == nil {
			return nil, fmt.Errorf("%w: %s: yaml is not a mapping", ErrInvalidInput, r)
		}
		// The document is the truth; the summary fields only fill gaps.
		r.apiVersion, _ = str(r.doc, "apiVersion")
		if k, _ := str(r.doc, "kind"); k != "" {
			r.kind = k
		}
		if r.name == "" {
			r.name = docName(r.doc)
		}
		if prev, dup := byIndex[res.GetIndex()]; dup {
			return nil, fmt.Errorf("%w: %s and %s share index %d; staged facts are matched by resource index", ErrInvalidInput, prev, r, res.GetIndex())
		}
		byIndex[res.GetIndex()] = r
		out = append(out, r)
	}
	for i, s := range req.GetStaged() {
		r, ok := byIndex[s.GetIndex()]
		if !ok {
			return nil, fmt.Errorf("%w: staged[%d] names resource index %d, which no resource has", ErrInvalidInput, i, s.GetIndex())
		}
		if r.staged != nil {
			return nil, fmt.Errorf("%w: staged[%d]: %s is staged twice", ErrInvalidInput, i, r)
		}
		r.staged = s
	}
	for _, r := range out {
		if r.staged == nil && r.kind != kindSecret && r.kind != kindOverlay {
			return nil, fmt.Errorf("%w: %s was not staged: every resource but Secrets and Overlays needs a staged entry with its index (%d)", ErrInvalidInput, r, r.res.GetIndex())
		}
	}
	return out, nil
}

// docName is the element's identifying label, else the metadata name.
func docName(doc map[string]any) string {
	if v, _ := str(doc, "metadata", "labels", nameLabel); v != "" {
		return v
	}
	if v, _ := str(doc, "metadata", "name"); v != "" {
		return v
	}
	v, _ := str(doc, "metadata", "generateName")
	return v
}

// worst is the resource status: the worst of its checks.
func worst(checks []*commonv1.Check) string {
	out := StatusPassed
	for _, c := range checks {
		switch c.GetStatus() {
		case StatusFailed:
			return StatusFailed
		case StatusWarning:
			out = StatusWarning
		}
	}
	return out
}

func passed(name, msg string) *commonv1.Check {
	return &commonv1.Check{Name: name, Status: StatusPassed, Message: msg}
}

func warning(name, msg string) *commonv1.Check {
	return &commonv1.Check{Name: name, Status: StatusWarning, Message: msg}
}

func failed(name, msg string) *commonv1.Check {
	return &commonv1.Check{Name: name, Status: StatusFailed, Message: msg}
}

// get walks a parsed document.
func get(doc map[string]any, path ...string) (any, bool) {
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// str is the string at path; false when missing or not a string.
func str(doc map[string]any, path ...string) (string, bool) {
	v, ok := get(doc, path...)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

// obj is the mapping at path.
func obj(doc map[string]any, path ...string) (map[string]any, bool) {
	v, ok := get(doc, path...)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}
