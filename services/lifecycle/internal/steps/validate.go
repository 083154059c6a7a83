package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// PackageVersion builds the compatibility service's view of a bundle.
func PackageVersion(b *bundle.Bundle, version string, builtIn bool) lifecycle.PackageVersion {
	ann := b.Package.Annotations
	return lifecycle.PackageVersion{
		Name:    b.Package.RefName,
		Version: version,
		BuiltIn: builtIn,
		Constraints: lifecycle.Constraints{
			SupervisorVersion:  ann["appplatform.vmware.com/supervisor-version-constraints"],
			KubernetesVersion:  b.Package.KubernetesVersionConstraints,
			SourceUpgrade:      ann["appplatform.vmware.com/source-version-upgrade-constraints"],
			DestinationUpgrade: ann["appplatform.vmware.com/destination-version-upgrade-constraints"],
		},
	}
}

// ValidateBundle runs the compatibility service's validation and static
// checks on a bundle rendered with the platform inventory. It returns
// warnings worth showing; issues are a blocked error.
func ValidateBundle(ctx context.Context, rp RenderPorts, compat lifecycle.Compatibility, svc *lifecycle.Service, b *bundle.Bundle) ([]lifecycle.ErrorDetail, error) {
	var warnings []lifecycle.ErrorDetail
	req := lifecycle.PackageValidation{PackageYAML: b.PackageFile, BuiltIn: svc.BuiltIn}
	rend, err := Render(ctx, rp, svc, b, lifecycle.RenderInput{})
	switch {
	case err == nil:
		req.Documents = rend.Resources
	case errors.Is(err, lifecycle.ErrUnavailable):
		return nil, err
	default:
		warnings = append(warnings, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeConfiguration, Severity: lifecycle.SeverityWarn,
			Message: fmt.Sprintf("the bundle does not render with the current platform inventory, so its resources were not statically checked yet (they are at activation): %v", err)})
	}
	resp, err := compat.ValidatePackage(ctx, req)
	if err != nil {
		if errors.Is(err, lifecycle.ErrInvalidArgument) {
			return nil, lifecycle.Blocked(lifecycle.ErrTypeConfiguration, err)
		}
		return nil, err
	}
	if !resp.Valid {
		var msgs []string
		for _, is := range resp.Issues {
			msg := is.Message
			if is.Expression != "" && !strings.Contains(msg, is.Expression) {
				msg += fmt.Sprintf(" (%s: %q)", is.Source, is.Expression)
			}
			msgs = append(msgs, msg)
		}
		return nil, lifecycle.Blocked(lifecycle.ErrTypeConfiguration, fmt.Errorf("the package failed validation: %s", strings.Join(msgs, "; ")))
	}
	return warnings, nil
}

// CheckConfiguration validates the service's current configuration against
// a new bundle's schema by rendering its effective values.
func CheckConfiguration(ctx context.Context, rp RenderPorts, svc *lifecycle.Service, nb *bundle.Bundle) []string {
	layers, err := Layers(ctx, rp.Inventory, svc, lifecycle.RenderInput{})
	if err != nil {
		return []string{err.Error()}
	}
	if _, err = rp.Renderer.RenderEffectiveValues(ctx, lifecycle.RenderRequest{Bundle: nb, Values: layers}); err != nil {
		return []string{err.Error()}
	}
	return nil
}
