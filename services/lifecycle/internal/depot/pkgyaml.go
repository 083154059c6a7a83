package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"carvel.dev/imgpkg/pkg/imgpkg/lockconfig"
	"sigs.k8s.io/yaml"
)

// Well-known paths inside a bundle tree.
const (
	packageFile    = "package.yml"
	imgpkgDir      = ".imgpkg"
	imagesLockFile = "images.yml"
)

// Document bounds. Real package.yml files are a few KiB (an SVG icon in base64
// is the biggest part); anything near these sizes is an attack, not a package.
const (
	maxPackageBytes   = 4 << 20
	maxLockBytes      = 4 << 20
	maxPackageDocs    = 64
	packageAPIVersion = "packaging.carvel.dev/v1alpha1"
	metaAPIVersion    = "data.packaging.carvel.dev/v1alpha1"
)

type parsedPackage struct {
	pkg         bundle.Package
	packageYAML []byte
	metadata    map[string]any
}

// yamlDoc is one document of a multi-document YAML stream, verbatim.
type yamlDoc struct {
	text []byte
	line int // 1-based line of the document's first line in the stream
}

// splitYAMLDocuments splits a stream at "---" document markers. YAML forbids
// a line starting with "---" followed by a blank (or the end of the line)
// anywhere but as a document marker, so splitting on such lines is exact,
// and it lets us hand out the Package document byte for byte.
func splitYAMLDocuments(data []byte) []yamlDoc {
	var docs []yamlDoc
	start, startLine, line := 0, 1, 1
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := bytes.TrimRight(data[off:next], "\r\n")
		if off != start && isDocMarker(l) {
			docs = append(docs, yamlDoc{text: data[start:off], line: startLine})
			start, startLine = off, line
		}
		off = next
		line++
	}
	return append(docs, yamlDoc{text: data[start:], line: startLine})
}

func isDocMarker(l []byte) bool {
	return bytes.HasPrefix(l, []byte("---")) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t')
}

// parsePackageFile parses package.yml: PackageMetadata and Package documents
// in any order, empty documents tolerated, other kinds ignored.
func parsePackageFile(data []byte) (parsedPackage, error) {
	var out parsedPackage
	invalid := func(format string, args ...any) (parsedPackage, error) {
		return parsedPackage{}, fmt.Errorf("%w: %s: %s", bundle.ErrInvalidPackage, packageFile, fmt.Sprintf(format, args...))
	}
	if len(data) > maxPackageBytes {
		return invalid("%d bytes, more than the %d allowed", len(data), maxPackageBytes)
	}
	docs := splitYAMLDocuments(data)
	if len(docs) > maxPackageDocs {
		return invalid("%d YAML documents, more than the %d allowed", len(docs), maxPackageDocs)
	}
	var pkgDocs, metaDocs int
	for _, d := range docs {
		js, err := yaml.YAMLToJSON(d.text)
		if err != nil {
			return invalid("document starting at line %d is not valid YAML: %v", d.line, err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue // empty document, e.g. a leading "---"
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(js, &head); err != nil {
			return invalid("document starting at line %d is not a YAML mapping with apiVersion and kind", d.line)
		}
		switch head.Kind {
		case "Package":
			pkgDocs++
			if head.APIVersion != packageAPIVersion {
				return invalid("Package document at line %d has apiVersion %q, want %q", d.line, head.APIVersion, packageAPIVersion)
			}
			p, err := decodePackage(js)
			if err != nil {
				return invalid("Package document at line %d: %v", d.line, err)
			}
			p.ProviderName, p.DisplayName = out.pkg.ProviderName, out.pkg.DisplayName
			out.pkg = p
			out.packageYAML = bytes.Clone(d.text)
		case "PackageMetadata":
			metaDocs++
			if head.APIVersion != metaAPIVersion {
				return invalid("PackageMetadata document at line %d has apiVersion %q, want %q", d.line, head.APIVersion, metaAPIVersion)
			}
			var meta map[string]any
			var names struct {
				Spec struct {
					DisplayName  string `json:"displayName"`
					ProviderName string `json:"providerName"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(js, &meta); err != nil {
				return invalid("PackageMetadata document at line %d: %v", d.line, err)
			}
			if err := json.Unmarshal(js, &names); err != nil {
				return invalid("PackageMetadata document at line %d: %v", d.line, describeJSONError(err))
			}
			out.metadata = meta
			out.pkg.DisplayName, out.pkg.ProviderName = names.Spec.DisplayName, names.Spec.ProviderName
		}
	}
	switch {
	case pkgDocs == 0:
		return invalid("no Package document (kind: Package, apiVersion: %s) found", packageAPIVersion)
	case pkgDocs > 1:
		return invalid("%d Package documents found, want exactly one", pkgDocs)
	case metaDocs > 1:
		return invalid("%d PackageMetadata documents found, want at most one", metaDocs)
	}
	return out, nil
}

func decodePackage(js []byte) (bundle.Package, error) {
	var doc struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			RefName                    string          `json:"refName"`
			Version                    json.RawMessage `json:"version"`
			KubernetesVersionSelection struct {
				Constraints string `json:"constraints"`
			} `json:"kubernetesVersionSelection"`
			ValuesSchema struct {
				OpenAPIv3 map[string]any `json:"openAPIv3"`
			} `json:"valuesSchema"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		return bundle.Package{}, describeJSONError(err)
	}
	var version string
	if v := bytes.TrimSpace(doc.Spec.Version); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
		if err := json.Unmarshal(v, &version); err != nil {
			// YAML reads 1.10 as the number 1.1; guessing would be wrong.
			return bundle.Package{}, fmt.Errorf("spec.version is %s, not a string (quote it, e.g. version: \"1.2.3\")", v)
		}
	}
	return bundle.Package{
		Name:                         doc.Metadata.Name,
		RefName:                      doc.Spec.RefName,
		Version:                      version,
		Annotations:                  doc.Metadata.Annotations,
		KubernetesVersionConstraints: doc.Spec.KubernetesVersionSelection.Constraints,
		ValuesSchema:                 doc.Spec.ValuesSchema.OpenAPIv3,
	}, nil
}

// describeJSONError names the offending field of a type mismatch.
func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("field %s: expected %s, got a YAML %s", te.Field, te.Type, te.Value)
	}
	return err
}

// parseImagesLock parses .imgpkg/images.yml with imgpkg's own lockconfig,
// which also normalises image references the way imgpkg copy does.
func parseImagesLock(data []byte) (images []bundle.Image, err error) {
	defer recoverHostile(&err, "parse "+imgpkgDir+"/"+imagesLockFile)
	if len(data) > maxLockBytes {
		return nil, fmt.Errorf("%w: %s/%s is %d bytes, more than the %d allowed", bundle.ErrHostile, imgpkgDir, imagesLockFile, len(data), maxLockBytes)
	}
	lock, err := lockconfig.NewImagesLockFromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not a valid imgpkg bundle: %s/%s: %w", bundle.ErrHostile, imgpkgDir, imagesLockFile, err)
	}
	for _, ref := range lock.Images {
		images = append(images, bundle.Image{Image: ref.Image, Annotations: ref.Annotations})
	}
	return images, nil
}

// sortedKeys returns the keys of m in order (used for deterministic output).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// recoverHostile turns a panic in library code (imgpkg panics on
// inconsistent input) into an ErrHostile error instead of a crash.
func recoverHostile(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: the bundle is inconsistent (imgpkg failed: %s)", bundle.ErrHostile, what, strings.TrimSpace(fmt.Sprint(r)))
	}
}
