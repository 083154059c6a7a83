package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// Register steps, in order: download the bundle and record it on the
// service, then validate it and enter it in the catalog.
var registerSteps = []string{"download", "validate"}

var registerOperation = operationDef{
	run: func(ctx context.Context, m *Manager, r *run, step string) error { return m.registerStep(ctx, r, step) },
	onFailure: func(svc *Service, _ *Operation, _ string) {
		svc.Status = StatusUnhealthy
	},
}

// downloadError classifies bundle errors for errorDetails.
func downloadError(err error) error {
	switch {
	case errors.Is(err, bundle.ErrInvalidSource), errors.Is(err, bundle.ErrHostile),
		errors.Is(err, bundle.ErrInvalidPackage), errors.Is(err, bundle.ErrFetch):
		return blocked(ErrTypeDownload, err)
	}
	return err
}

// fetch downloads a bundle, showing progress on the service.
func (m *Manager) fetch(ctx context.Context, r *run, source string) (*bundle.Bundle, error) {
	var mu sync.Mutex
	last := time.Time{}
	progress := func(step string, percent int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 250*time.Millisecond && percent != 100 {
			return
		}
		last = time.Now()
		_, _ = m.mutate(context.WithoutCancel(ctx), r.op.ServiceID, func(_ Tx, svc *Service) error {
			if svc.ActiveOperation == r.op.ID {
				svc.Progress = &Progress{OperationID: r.op.ID, Type: r.op.Type, Step: "download", Message: step, Percent: percent}
			}
			return nil
		})
	}
	b, err := m.bundles.Fetch(ctx, source, progress)
	if err != nil {
		return nil, downloadError(fmt.Errorf("fetch %s: %w", source, err))
	}
	return b, nil
}

// registerStep runs the steps of a register operation.
func (m *Manager) registerStep(ctx context.Context, r *run, name string) error {
	switch name {
	case "download":
		b, err := m.fetch(ctx, r, r.op.Params.Source)
		if err != nil {
			return err
		}
		return m.adoptBundle(ctx, r, b)
	case "validate":
		return m.validateRegistration(ctx, r)
	}
	return fmt.Errorf("register has no step %q", name)
}

// packageIdentity reconciles what the request named with what the package
// says.
func packageIdentity(b *bundle.Bundle, wantName, wantVersion string) (name, version string, err error) {
	name = b.Package.RefName
	version = b.Package.Version
	if wantName != "" && name != "" && wantName != name {
		return "", "", blocked(ErrTypeDownload, fmt.Errorf("the request names the service %q but the package's spec.refName is %q", wantName, name))
	}
	if wantVersion != "" && version != "" && wantVersion != version {
		return "", "", blocked(ErrTypeDownload, fmt.Errorf("the request names version %q but the package's spec.version is %q", wantVersion, version))
	}
	if name == "" {
		name = wantName
	}
	if version == "" {
		version = wantVersion
	}
	if name == "" {
		return "", "", blocked(ErrTypeDownload, fmt.Errorf("package.yml has no spec.refName and the request named none: pass \"name\""))
	}
	if version == "" {
		return "", "", blocked(ErrTypeDownload, fmt.Errorf("package.yml has no spec.version (set by the build) and the request named none: pass \"version\""))
	}
	return name, version, nil
}

func vendorOf(b *bundle.Bundle) string {
	v := strings.ToLower(strings.TrimSpace(b.Package.ProviderName))
	v = strings.ReplaceAll(v, " ", "-")
	if v == "" {
		return "unknown"
	}
	return v
}

// adoptBundle records the downloaded bundle on the service.
func (m *Manager) adoptBundle(ctx context.Context, r *run, b *bundle.Bundle) error {
	name, version, err := packageIdentity(b, r.op.Params.Name, r.op.Params.Version)
	if err != nil {
		return err
	}
	r.op.ToVersion = version
	r.op.ServiceName = name
	r.op.Params.TargetDigest = b.Digest
	_, err = m.mutate(ctx, r.op.ServiceID, func(tx Tx, svc *Service) error {
		for _, other := range m.repo.Services(ctx) {
			if other.ID != svc.ID && other.Name == name && other.LifecycleState != StateDecommissioned {
				return blocked(ErrTypeConfiguration, fmt.Errorf("%s is already registered as service %s (version %s): upgrade that service (PATCH source) or register this version with POST /v2/vcf-service-versions", name, other.ID, other.Version))
			}
		}
		svc.Name, svc.Version, svc.Digest = name, version, b.Digest
		svc.Vendor = vendorOf(b)
		svc.Namespace = Namespace(name)
		return tx.PutOperation(r.op)
	})
	return err
}

// packageVersion builds the compatibility service's view of a bundle.
func packageVersion(b *bundle.Bundle, version string, builtIn bool) *compatibilityv1.PackageVersion {
	ann := b.Package.Annotations
	return &compatibilityv1.PackageVersion{
		Name:    b.Package.RefName,
		Version: version,
		BuiltIn: builtIn,
		Constraints: &compatibilityv1.Constraints{
			SupervisorVersion:  ann["appplatform.vmware.com/supervisor-version-constraints"],
			KubernetesVersion:  b.Package.KubernetesVersionConstraints,
			SourceUpgrade:      ann["appplatform.vmware.com/source-version-upgrade-constraints"],
			DestinationUpgrade: ann["appplatform.vmware.com/destination-version-upgrade-constraints"],
		},
	}
}

// validateBundle runs the compatibility service's validation and static
// checks on a bundle rendered with the platform inventory. It returns
// warnings worth showing; issues are a blocked error.
func (m *Manager) validateBundle(ctx context.Context, svc *Service, b *bundle.Bundle) ([]ErrorDetail, error) {
	var warnings []ErrorDetail
	req := &compatibilityv1.ValidatePackageRequest{PackageYaml: b.PackageFile, BuiltIn: svc.BuiltIn}
	rend, err := m.render(ctx, svc, b, RenderInput{})
	switch {
	case err == nil:
		req.Resources = rend.Resources
	case errors.Is(err, ErrUnavailable):
		return nil, err
	default:
		warnings = append(warnings, ErrorDetail{Type: ErrTypeConfiguration, Severity: SeverityWarn,
			Message: fmt.Sprintf("the bundle does not render with the current platform inventory, so its resources were not statically checked yet (they are at activation): %v", err)})
	}
	resp, err := m.peers.Compatibility.ValidatePackage(ctx, req)
	if err != nil {
		err = peerError("compatibility", err)
		if errors.Is(err, ErrInvalidArgument) {
			return nil, blocked(ErrTypeConfiguration, err)
		}
		return nil, err
	}
	if !resp.GetValid() {
		var msgs []string
		for _, is := range resp.GetIssues() {
			msg := is.GetMessage()
			if is.GetExpression() != "" && !strings.Contains(msg, is.GetExpression()) {
				msg += fmt.Sprintf(" (%s: %q)", is.GetSource(), is.GetExpression())
			}
			msgs = append(msgs, msg)
		}
		return nil, blocked(ErrTypeConfiguration, fmt.Errorf("the package failed validation: %s", strings.Join(msgs, "; ")))
	}
	return warnings, nil
}

func (m *Manager) validateRegistration(ctx context.Context, r *run) error {
	svc := r.svc
	b, err := m.loadBundle(svc)
	if err != nil {
		return err
	}
	warnings, err := m.validateBundle(ctx, svc, b)
	if err != nil {
		return err
	}
	_, err = m.mutate(ctx, svc.ID, func(tx Tx, svc *Service) error {
		svc.ErrorDetails = warnings
		svc.Status = StatusUnresolved
		svc.Phase = PhaseResolving
		entry := &CatalogEntry{Name: svc.Name, Version: svc.Version, Source: svc.Source, Digest: svc.Digest,
			Status: StatusReady, RegisteredAt: m.now(), BuiltIn: svc.BuiltIn}
		return tx.PutCatalog(entry)
	})
	return err
}
