// Package scaletest writes a lifecycle data directory holding many
// active, Healthy services with their resources, journals and the
// simulated targets' objects, for the scale benchmarks (restart, idle
// CPU, list). It writes the store directly: registering ten thousand
// bundles through the API would take longer than the benchmarks.
package scaletest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// Spec sizes the fixture.
type Spec struct {
	// Services is how many services; each is active and Healthy.
	Services int
	// Resources per service: SupervisorRegistries spread over Supervisors.
	Resources int
	// Supervisors the registries are spread over (default 10).
	Supervisors int
}

// ID is the id of service i.
func ID(i int) string {
	return fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, i)
}

// Seed writes the fixture into dataDir (lifecycle.db and
// simulated-targets.db), as the lifecycle service lays them out.
func Seed(ctx context.Context, dataDir string, spec Spec) error {
	if spec.Supervisors == 0 {
		spec.Supervisors = 10
	}
	st, err := boltstore.OpenWithOptions(filepath.Join(dataDir, "lifecycle.db"), storage.Schema, boltstore.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	// Sealed with the data directory's development key, as the service
	// would have sealed them: a start finds nothing to re-seal.
	keyFile, _, err := seal.EnsureDevKey(dataDir)
	if err != nil {
		return err
	}
	keys, err := seal.LoadFile(keyFile)
	if err != nil {
		return err
	}
	repo, err := storage.NewSealedRepo(ctx, st, keys)
	if err != nil {
		return err
	}
	sim, err := simulator.Open(simulator.Config{Path: filepath.Join(dataDir, "simulated-targets.db")})
	if err != nil {
		return err
	}
	defer func() { _ = sim.Close() }()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const batch = 500
	for from := 0; from < spec.Services; from += batch {
		var objs []target.Object
		err := repo.Update(ctx, func(tx lifecycle.Tx) error {
			for i := from; i < min(from+batch, spec.Services); i++ {
				o, err := seedService(tx, spec, i, base)
				if err != nil {
					return err
				}
				objs = append(objs, o...)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("seed services %d..: %w", from, err)
		}
		if err := sim.Load(ctx, objs); err != nil {
			return fmt.Errorf("seed targets %d..: %w", from, err)
		}
	}
	// Marks the store as sealed by the key (nothing is rewritten).
	if _, err := repo.Reseal(ctx); err != nil {
		return fmt.Errorf("mark the seeded store sealed: %w", err)
	}
	return nil
}

// seedService writes service i, its resources and its activation journal,
// and returns the target objects they stand for.
func seedService(tx lifecycle.Tx, spec Spec, i int, base time.Time) ([]target.Object, error) {
	at := base.Add(time.Duration(i) * time.Second)
	svc := &lifecycle.Service{
		ID: ID(i), Vendor: []string{"broadcom", "vmware"}[i%2], Name: fmt.Sprintf("svc%05d.example.com", i),
		Version: fmt.Sprintf("1.%d.0", i%12), Source: fmt.Sprintf("https://depot.example.com/svc%05d.tar", i),
		Status: lifecycle.StatusHealthy, LifecycleState: lifecycle.StateActive, Phase: "Installing",
		Namespace: fmt.Sprintf("svc-svc%05d-example-com", i), CreatedAt: at, UpdatedAt: at,
		Labels: map[string]string{"team": []string{"platform", "data"}[i%2]}, LastKnownGood: fmt.Sprintf("1.%d.0", i%12),
	}
	if err := tx.PutService(svc); err != nil {
		return nil, err
	}
	owner := target.Owner{ServiceID: svc.ID, Version: svc.Version}
	objs := make([]target.Object, 0, spec.Resources)
	for r := range spec.Resources {
		sup := fmt.Sprintf("sv-%02d", r%spec.Supervisors)
		name := fmt.Sprintf("registry-%d", r)
		endpoint := fmt.Sprintf("%s.svc%05d.example.com:5000", name, i)
		doc := map[string]any{
			"apiVersion": "services.vcfa.broadcom.com/v2", "kind": "SupervisorRegistry",
			"metadata": map[string]any{"labels": map[string]any{"services.vcfa.broadcom.com/name": name}},
			"spec":     map[string]any{"supervisor": sup, "endpoint": endpoint, "username": "admin"},
		}
		key := target.Key{System: target.SystemSupervisor, Scope: sup, Kind: "SupervisorRegistry", Identity: endpoint}
		res := &lifecycle.Resource{
			ServiceID: svc.ID, ID: "SupervisorRegistry/" + sup + "/" + name, Kind: "SupervisorRegistry",
			APIVersion: "services.vcfa.broadcom.com/v2", Name: name, Namespace: svc.Namespace, Supervisor: sup,
			Target: key, Doc: doc, Hash: hash(doc), OwnerVersion: svc.Version, Finalizers: []string{lifecycle.FinalizerCleanup},
			Status: target.StatusHealthy, Message: "Created", LastModified: at,
		}
		if err := tx.PutResource(res); err != nil {
			return nil, err
		}
		objs = append(objs, target.Object{Key: key, Namespace: svc.Namespace, Spec: doc, Owner: owner,
			Finalizers: []string{lifecycle.FinalizerCleanup}, Status: target.StatusHealthy, Message: "Created", Generation: 1, UpdatedAt: at})
	}
	return objs, tx.PutOperation(journal(svc, at))
}

// journal is a finished register and activation of the service.
func journal(svc *lifecycle.Service, at time.Time) *lifecycle.Operation {
	step := func(name string) lifecycle.Step {
		return lifecycle.Step{Name: name, Status: lifecycle.StepSucceeded, StartedAt: at, FinishedAt: at}
	}
	return &lifecycle.Operation{
		ID: svc.ID + "-activate", ServiceID: svc.ID, ServiceName: svc.Name, Type: lifecycle.OpActivate,
		ToVersion: svc.Version, Outcome: lifecycle.OutcomeSucceeded, StartedAt: at, FinishedAt: at,
		Steps: []lifecycle.Step{step("render"), step("compatibility"), step("prechecks"), step("resources")},
	}
}

// hash is the resource hash the lifecycle service computes (sha256 of the
// document's JSON).
func hash(doc map[string]any) string {
	raw, _ := json.Marshal(doc)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
