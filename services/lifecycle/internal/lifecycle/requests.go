package lifecycle

import "slices"

// RenderInput overrides the stored layers for a preview; nil fields take
// the service's stored values and the platform inventory.
type RenderInput struct {
	Inventory       *Inventory
	PlatformOverlay *string
	VendorOverlay   *string
	UserOverwrite   *string
}

// HookReport is the outcome of a service's pre-check hook(s).
type HookReport struct {
	Configured bool
	Endpoint   string
	Results    []CheckResult
	Failure    string
	Blocked    bool
}

// WithoutType drops the details of one type.
func WithoutType(ds []ErrorDetail, t string) []ErrorDetail {
	out := ds[:0:0]
	for _, d := range ds {
		if d.Type != t {
			out = append(out, d)
		}
	}
	return out
}

// AddDetails appends each of add that ds does not hold yet: a step run
// again after a restart notes the same results once.
func AddDetails(ds []ErrorDetail, add ...ErrorDetail) []ErrorDetail {
	for _, d := range add {
		if !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	return ds
}
