package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Register: POST /v2/vcf-services. Download the bundle and record it on
// the service, then validate it and enter it in the catalog.
var registerOp = operation{
	typ: lifecycle.OpRegister,
	steps: []step{
		{"download", registerDownload},
		{"validate", registerValidate},
	},
	onSuccess: func(svc *lifecycle.Service, _ *lifecycle.Operation) {
		svc.Status = lifecycle.StatusUnresolved
	},
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// registerDownload fetches the bundle and records it on the service.
func registerDownload(ctx context.Context, d *Deps, r *run) error {
	b, err := steps.Fetch(ctx, d.Bundles, d.Writer, r.op, r.op.Params.Source)
	if err != nil {
		return err
	}
	return adoptBundle(ctx, d, r, b)
}

// packageIdentity reconciles what the request named with what the package
// says.
func packageIdentity(b *bundle.Bundle, wantName, wantVersion string) (name, version string, err error) {
	name = b.Package.RefName
	version = b.Package.Version
	if wantName != "" && name != "" && wantName != name {
		return "", "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the request names the service %q but the package's spec.refName is %q", wantName, name))
	}
	if wantVersion != "" && version != "" && wantVersion != version {
		return "", "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the request names version %q but the package's spec.version is %q", wantVersion, version))
	}
	if name == "" {
		name = wantName
	}
	if version == "" {
		version = wantVersion
	}
	if name == "" {
		return "", "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("package.yml has no spec.refName and the request named none: pass \"name\""))
	}
	if version == "" {
		return "", "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("package.yml has no spec.version (set by the build) and the request named none: pass \"version\""))
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
func adoptBundle(ctx context.Context, d *Deps, r *run, b *bundle.Bundle) error {
	name, version, err := packageIdentity(b, r.op.Params.Name, r.op.Params.Version)
	if err != nil {
		return err
	}
	r.op.ToVersion = version
	r.op.ServiceName = name
	r.op.Params.TargetDigest = b.Digest
	if other := serviceNamed(ctx, d, name, r.op.ServiceID); other != nil {
		return discardDuplicate(ctx, d, r, alreadyRegistered(name, other))
	}
	_, err = d.Writer.Mutate(ctx, r.op.ServiceID, func(tx lifecycle.Tx, svc *lifecycle.Service) error {
		if other := serviceNamed(ctx, d, name, svc.ID); other != nil {
			return lifecycle.Blocked(lifecycle.ErrTypeConfiguration, alreadyRegistered(name, other))
		}
		svc.Name, svc.Version, svc.Digest = name, version, b.Digest
		svc.Vendor = vendorOf(b)
		svc.Namespace = lifecycle.Namespace(name)
		return tx.PutOperation(r.op)
	})
	return err
}

// discardDuplicate ends a registration whose package turned out, once
// downloaded, to have a service already: the new service's record goes in
// the transaction that records the operation's failure, so no nameless
// service is left and its history says why.
func discardDuplicate(ctx context.Context, d *Deps, r *run, cause error) error {
	now := d.Now()
	op := r.op
	for i := range op.Steps {
		switch {
		case op.Steps[i].Name == "download":
			op.Steps[i].Status, op.Steps[i].Message, op.Steps[i].FinishedAt = lifecycle.StepFailed, cause.Error(), now
		case op.Steps[i].Status == lifecycle.StepPending:
			op.Steps[i].Status = lifecycle.StepSkipped
		}
	}
	op.Outcome, op.FinishedAt = lifecycle.OutcomeFailed, now
	err := d.Writer.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutOperation(op); err != nil {
			return err
		}
		return tx.DeleteService(op.ServiceID)
	})
	if err != nil {
		return err
	}
	return lifecycle.Blocked(lifecycle.ErrTypeConfiguration, cause)
}

// registerValidate validates the bundle and enters it in the catalog.
func registerValidate(ctx context.Context, d *Deps, r *run) error {
	svc := r.svc
	b, err := steps.LoadBundle(d.Bundles, svc)
	if err != nil {
		return err
	}
	warnings, err := steps.ValidateBundle(ctx, d.Ports.Render(), d.Ports.Peers.Compatibility, svc, b)
	if err != nil {
		return err
	}
	r.note(warnings)
	_, err = d.Writer.Mutate(ctx, svc.ID, func(tx lifecycle.Tx, svc *lifecycle.Service) error {
		// Unresolved comes with the operation's end (onSuccess), in the
		// transaction that lets the service take its next operation: a
		// client that sees Unresolved and activates is never refused
		// because the registration still held the service.
		svc.ErrorDetails = warnings
		svc.Phase = lifecycle.PhaseResolving
		entry := &lifecycle.CatalogEntry{Name: svc.Name, Version: svc.Version, Source: svc.Source, Digest: svc.Digest,
			Status: lifecycle.StatusReady, RegisteredAt: d.Now(), BuiltIn: svc.BuiltIn, Constraints: steps.CatalogConstraints(b)}
		return putCatalog(tx, entry)
	})
	return err
}
