package render

import (
	"errors"
	"fmt"
	"strings"

	uierrs "github.com/cppforlife/go-cli-ui/errors"
)

// Sentinel errors of the rendering domain. internal/server maps them to gRPC
// codes; everything else in this package wraps one of them.
var (
	// ErrInvalidInput: the request's bundle or value layers cannot be
	// rendered (bad YAML, a failing template, a schema violation, a
	// forbidden resource kind).
	ErrInvalidInput = errors.New("invalid input")
	// ErrBundleNotCached: the request names a bundle digest without its
	// files and the digest is not in the cache.
	ErrBundleNotCached = errors.New("bundle not cached")
	// ErrRenderFailed: ytt failed in a way the input does not explain (a
	// panic inside the library).
	ErrRenderFailed = errors.New("render failed")
)

// Layer names used in error messages and provenance. They are the names a
// caller sees in api.md (`platformOverlay`, `userOverwrite`, …) plus the
// stages that have no request field of their own.
const (
	LayerBundle          = "bundle"
	LayerPlatformOverlay = "platformOverlay"
	LayerTranspiler      = "transpiler"
	LayerVendorOverlay   = "vendorOverlay"
	LayerUserOverwrite   = "userOverwrite"
	LayerValuesSchema    = "valuesSchema"
	LayerConfig          = "config"
	LayerRuntimeSpec     = "runtimeSpec"
	LayerOverlay         = "overlay"
	LayerRequest         = "request"
)

// Violation is one thing wrong with an input: where (a dotted path such as
// regions[0].hostSupervisor.port, or empty) and which rule it broke.
type Violation struct {
	Path string `json:"path,omitempty"`
	Rule string `json:"rule"`
}

// Error is a domain error that names the layer, the path and the violated
// rule, so that a caller can fix its input without reading server logs.
type Error struct {
	// Kind is one of the sentinel errors above.
	Kind       error
	Layer      string
	Violations []Violation
}

func (e *Error) Error() string {
	parts := make([]string, 0, len(e.Violations))
	for _, v := range e.Violations {
		if v.Path == "" {
			parts = append(parts, v.Rule)
			continue
		}
		parts = append(parts, v.Path+": "+v.Rule)
	}
	return e.Layer + ": " + strings.Join(parts, "; ")
}

func (e *Error) Unwrap() error { return e.Kind }

// invalid builds an ErrInvalidInput error with one violation.
func invalid(layer, path, format string, args ...any) *Error {
	return &Error{Kind: ErrInvalidInput, Layer: layer, Violations: []Violation{{Path: path, Rule: fmt.Sprintf(format, args...)}}}
}

// yttFailure reports a failing ytt run of one layer, worded exactly as the
// ytt CLI words it (its message already names the file and line).
func yttFailure(layer string, err error) *Error {
	return invalid(layer, "", "%s", yttMessage(err))
}

func yttMessage(err error) string {
	return strings.TrimSpace(uierrs.NewMultiLineError(err).Error())
}
