// Package pkgdoc validates a bundle's package.yml at registration: it
// extracts the package's name, version and four constraint expressions,
// validates every expression (seed 000 "Constraint Expression Syntax") and
// runs the static checks (seed 002 / upgrade.md "Static checks"): rendered
// resources are supported kinds at supported API versions, and the values
// schema is a valid OpenAPI v3 schema.
//
// Input that cannot be analysed at all (not YAML, no Package document) is
// rejected with ErrInvalidPackage; everything else is reported as issues,
// all of them at once.
package pkgdoc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

// ErrInvalidPackage marks a package.yml that cannot be analysed.
var ErrInvalidPackage = errors.New("invalid package document")

// MaxPackageBytes bounds package.yml; real ones are a few kilobytes.
const MaxPackageBytes = 1 << 20

// Issue kinds besides the four constraint kinds.
const (
	IssueResourceKind = "RESOURCE_KIND"
	IssueAPIVersion   = "API_VERSION"
	IssueValuesSchema = "VALUES_SCHEMA"
	IssuePackage      = "PACKAGE"
)

// The Carvel documents package.yml holds (packaging-and-build.md).
const (
	packageAPIVersion  = "packaging.carvel.dev/v1alpha1"
	metadataAPIVersion = "data.packaging.carvel.dev/v1alpha1"
)

// Issue is one problem of a package.
type Issue struct {
	// Kind is a compat.Kind constraint kind or one of the Issue* kinds.
	Kind string
	// Source is the annotation, field path or resource it came from.
	Source string
	// Expression is the offending string, verbatim.
	Expression string
	Message    string
}

// Resource is one rendered resource for the static checks.
type Resource struct {
	APIVersion string
	Kind       string
	Name       string
}

// Request is what ValidatePackage receives.
type Request struct {
	PackageYAML []byte
	Resources   []Resource
	// BuiltIn services are compatible by default: the static checks are
	// skipped (their constraint expressions are still validated, since
	// they are parsed whenever the service is evaluated).
	BuiltIn bool
}

// Result is the outcome of a validation.
type Result struct {
	Valid   bool
	Package compat.PackageVersion
	Issues  []Issue
}

// Validator validates packages, parsing expressions through a shared cache.
type Validator struct {
	cache *constraint.Cache
}

// NewValidator returns a validator.
func NewValidator(cache *constraint.Cache) *Validator { return &Validator{cache: cache} }

// Validate validates a package and its rendered resources.
func (v *Validator) Validate(ctx context.Context, req Request) (Result, error) {
	docs, err := splitDocuments(req.PackageYAML)
	if err != nil {
		return Result{}, err
	}
	var issues []Issue
	pkgDoc, metaDoc, structural, err := classify(docs)
	if err != nil {
		return Result{}, err
	}
	issues = append(issues, structural...)

	pv := compat.PackageVersion{BuiltIn: req.BuiltIn}
	pv.Name = stringField(pkgDoc, &issues, "spec", "refName")
	pv.Version = stringField(pkgDoc, &issues, "spec", "version")
	issues = append(issues, v.constraints(pkgDoc, &pv.Constraints)...)
	if metaDoc != nil {
		issues = append(issues, misplacedAnnotations(metaDoc)...)
	}
	if !req.BuiltIn {
		issues = append(issues, checkValuesSchema(ctx, pkgDoc.root)...)
		issues = append(issues, checkResources(req.Resources)...)
	}
	return Result{Valid: len(issues) == 0, Package: pv, Issues: issues}, nil
}

// document is one YAML document of package.yml.
type document struct {
	index int // from 1, as an author counts them
	root  *yaml.Node
	kind  string
	api   string
}

func (d *document) describe() string {
	if d.kind == "" {
		return fmt.Sprintf("package.yml document %d", d.index)
	}
	return fmt.Sprintf("package.yml document %d (%s)", d.index, d.kind)
}

func splitDocuments(data []byte) ([]*document, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%w: package_yaml is empty: send the bundle's package.yml", ErrInvalidPackage)
	}
	if len(data) > MaxPackageBytes {
		return nil, fmt.Errorf("%w: package.yml is %d bytes, more than the %d accepted", ErrInvalidPackage, len(data), MaxPackageBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*document
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: package.yml document %d is not valid YAML: %w", ErrInvalidPackage, i, err)
		}
		if len(n.Content) == 0 || isNull(resolve(n.Content[0])) {
			continue // an empty document, e.g. after a leading "---"
		}
		root := resolve(n.Content[0])
		if root == nil || root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%w: package.yml document %d is %s, not a Kubernetes object (apiVersion, kind, metadata, spec)",
				ErrInvalidPackage, i, describe(root))
		}
		docs = append(docs, &document{
			index: i, root: root,
			kind: scalarText(field(root, "kind")), api: scalarText(field(root, "apiVersion")),
		})
	}
	return docs, nil
}

// classify finds the Package and PackageMetadata documents. Documents may
// come in any order; anything else is reported as an issue.
func classify(docs []*document) (pkg, meta *document, issues []Issue, err error) {
	var pkgs []*document
	for _, d := range docs {
		switch d.kind {
		case "Package":
			pkgs = append(pkgs, d)
			if d.api != packageAPIVersion {
				issues = append(issues, Issue{Kind: IssuePackage, Source: d.describe(), Expression: d.api,
					Message: fmt.Sprintf("%s has apiVersion %q; a Carvel Package is %s", d.describe(), d.api, packageAPIVersion)})
			}
		case "PackageMetadata":
			if meta != nil {
				issues = append(issues, Issue{Kind: IssuePackage, Source: d.describe(),
					Message: fmt.Sprintf("%s is a second PackageMetadata (the first is document %d); keep exactly one", d.describe(), meta.index)})
				continue
			}
			meta = d
			if d.api != metadataAPIVersion {
				issues = append(issues, Issue{Kind: IssuePackage, Source: d.describe(), Expression: d.api,
					Message: fmt.Sprintf("%s has apiVersion %q; a Carvel PackageMetadata is %s", d.describe(), d.api, metadataAPIVersion)})
			}
		case "":
			issues = append(issues, Issue{Kind: IssuePackage, Source: d.describe(),
				Message: fmt.Sprintf("%s has no kind; package.yml holds a PackageMetadata and a Package document", d.describe())})
		default:
			issues = append(issues, Issue{Kind: IssuePackage, Source: d.describe(), Expression: d.kind,
				Message: fmt.Sprintf("%s is a %s; package.yml holds only a PackageMetadata and a Package document", d.describe(), d.kind)})
		}
	}
	switch len(pkgs) {
	case 0:
		return nil, nil, nil, fmt.Errorf("%w: package.yml has no Package document (apiVersion %s, kind Package); it holds the version and constraints to validate",
			ErrInvalidPackage, packageAPIVersion)
	case 1:
	default:
		idx := make([]string, len(pkgs))
		for i, d := range pkgs {
			idx[i] = fmt.Sprint(d.index)
		}
		return nil, nil, nil, fmt.Errorf("%w: package.yml has %d Package documents (documents %s); a bundle carries exactly one",
			ErrInvalidPackage, len(pkgs), strings.Join(idx, ", "))
	}
	if meta == nil {
		issues = append(issues, Issue{Kind: IssuePackage, Source: "package.yml",
			Message: fmt.Sprintf("package.yml has no PackageMetadata document (apiVersion %s, kind PackageMetadata); add one with the service's display name and descriptions", metadataAPIVersion)})
	}
	return pkgs[0], meta, issues, nil
}

// stringField reads a string field of the Package document, reporting a
// wrongly typed one.
func stringField(d *document, issues *[]Issue, keys ...string) string {
	n := path(d.root, keys...)
	s, found, ok := stringValue(n)
	if !ok {
		p := strings.Join(keys, ".")
		*issues = append(*issues, Issue{Kind: IssuePackage, Source: p, Expression: found,
			Message: fmt.Sprintf("%s of the Package document must be a string, found %s; quote it", p, describeFound(n, found))})
	}
	return s
}

func describeFound(n *yaml.Node, found string) string {
	if n != nil && n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("the %s %s", strings.TrimPrefix(n.Tag, "!!"), truncate(found))
	}
	return found
}

// constraints extracts and validates the four expressions.
func (v *Validator) constraints(d *document, out *compat.Constraints) []Issue {
	var issues []Issue
	annotations := path(d.root, "metadata", "annotations")
	if !isNull(annotations) && annotations.Kind != yaml.MappingNode {
		issues = append(issues, Issue{Kind: IssuePackage, Source: "metadata.annotations",
			Message: fmt.Sprintf("metadata.annotations of the Package document must be a mapping, found %s", describe(annotations))})
		annotations = nil
	}
	for _, kind := range compat.ConstraintKinds {
		var n *yaml.Node
		if kind == compat.KindKubernetesVersion {
			n = path(d.root, "spec", "kubernetesVersionSelection", "constraints")
		} else {
			n = field(annotations, kind.Source())
		}
		expr, found, ok := stringValue(n)
		if !ok {
			issues = append(issues, Issue{Kind: string(kind), Source: kind.Source(), Expression: found,
				Message: fmt.Sprintf("%s must be a string, found %s; quote the expression", kind.Source(), describeFound(n, found))})
			continue
		}
		// The package reflects the document as written, valid or not.
		switch kind {
		case compat.KindSupervisorVersion:
			out.SupervisorVersion = expr
		case compat.KindKubernetesVersion:
			out.KubernetesVersion = expr
		case compat.KindSourceUpgrade:
			out.SourceUpgrade = expr
		case compat.KindDestinationUpgrade:
			out.DestinationUpgrade = expr
		}
		if _, err := v.cache.Parse(kind.Syntax(), expr); err != nil {
			issues = append(issues, Issue{Kind: string(kind), Source: kind.Source(), Expression: expr,
				Message: fmt.Sprintf("%s: %v", kind.Source(), err)})
		}
	}
	return issues
}

// misplacedAnnotations reports constraint annotations put on the
// PackageMetadata document, where the platform never reads them.
func misplacedAnnotations(d *document) []Issue {
	var issues []Issue
	annotations := path(d.root, "metadata", "annotations")
	for _, kind := range []compat.Kind{compat.KindSupervisorVersion, compat.KindSourceUpgrade, compat.KindDestinationUpgrade} {
		n := field(annotations, kind.Source())
		if n == nil {
			continue
		}
		issues = append(issues, Issue{Kind: string(kind), Source: d.describe() + " metadata.annotations", Expression: scalarText(n),
			Message: fmt.Sprintf("%s is on the PackageMetadata document, where it is ignored; move it to the Package document's metadata.annotations", kind.Source())})
	}
	return issues
}
