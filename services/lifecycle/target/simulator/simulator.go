// Package simulator is a SIMULATED target driver: it stands in for the
// Supervisor, vCenter and VCF Automation APIs, which this project cannot
// reach. It keeps target state durably in its own bbolt file, can be seeded
// with pre-existing resources (to exercise adoption) and platform facts,
// and lets tests inject faults: failed operations, slow creation, unhealthy
// resources, unreachable targets.
//
// It is not a model of any real API's wire protocol; it models the
// behaviour the controllers depend on (ownership, adoption, finalizer
// cleanup, status) as the element-type docs describe it.
package simulator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

const (
	bucketObjects = "objects"
	bucketMeta    = "meta"
	keySeeded     = "seeded"
)

var schema = store.Schema{Version: 1, Buckets: []string{bucketObjects, bucketMeta, bucketMoves}}

// DefaultSupportedAPIs are the kinds every simulated Supervisor accepts.
var DefaultSupportedAPIs = []string{
	"services.vcfa.broadcom.com/v2/SupervisorService",
	"services.vcfa.broadcom.com/v2/SupervisorRegistry",
	"services.vcfa.broadcom.com/v2/Overlay",
	"services.vcfa.broadcom.com/v2/GlobalRole",
	"services.vcfa.broadcom.com/v2/Role",
	"services.vcfa.broadcom.com/v2/RightBundle",
	"services.vcfa.broadcom.com/v2/VcfaServiceAccount",
	"services.vcfa.broadcom.com/v2/VcServiceAccount",
	"services.vcfa.broadcom.com/v2/ApiExtension",
	"services.vcfa.broadcom.com/v2/ApiExtensionProxy",
	"services.vcfa.broadcom.com/v2/RelyingParty",
	"services.vcfa.broadcom.com/v2/UserInterfacePlugin",
	"services.vcfa.broadcom.com/v2/RdeBundle",
	"v1/Secret",
}

// Config configures Open.
type Config struct {
	// Path of the bbolt file keeping target state.
	Path string
	Seed *Seed
	Now  func() time.Time
}

// Simulator is the simulated Driver.
type Simulator struct {
	st  *boltstore.Store
	now func() time.Time

	watch watchers

	mu          sync.Mutex
	seed        Seed
	faults      []*activeFault
	supervisors map[string]SeedSupervisor
}

var _ target.Driver = (*Simulator)(nil)

// Open opens (or creates) the simulated targets.
func Open(cfg Config) (*Simulator, error) {
	seed := Seed{}
	if cfg.Seed != nil {
		if err := cfg.Seed.validate(); err != nil {
			return nil, err
		}
		seed = *cfg.Seed
	}
	if seed.VCFAVersion == "" {
		seed.VCFAVersion = "9.1.0"
	}
	if len(seed.SupportedAPIs) == 0 {
		seed.SupportedAPIs = DefaultSupportedAPIs
	}
	if seed.DefaultAvailable == nil {
		q := DefaultAvailable
		seed.DefaultAvailable = &q
	}
	// Process crashes keep every write; only a power loss could lose the
	// last ones, which a simulator can afford.
	st, err := boltstore.OpenWithOptions(cfg.Path, schema, boltstore.Options{NoSync: true})
	if err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	s := &Simulator{st: st, now: cfg.Now, seed: seed, supervisors: map[string]SeedSupervisor{}}
	if s.now == nil {
		s.now = time.Now
	}
	for _, sup := range seed.Supervisors {
		s.supervisors[sup.Name] = sup
	}
	for _, f := range seed.Faults {
		s.faults = append(s.faults, &activeFault{Fault: f})
	}
	if err := s.loadResources(seed.Resources); err != nil {
		_ = st.Close()
		return nil, err
	}
	return s, nil
}

// loadResources inserts the seed's pre-existing resources once.
func (s *Simulator) loadResources(res []SeedResource) error {
	return s.st.Update(context.Background(), func(tx store.Tx) error {
		if _, err := tx.Get(bucketMeta, keySeeded); err == nil {
			return nil
		}
		for _, r := range res {
			obj := target.Object{Key: r.Key, Namespace: r.Namespace, Spec: r.Spec, Status: target.StatusHealthy,
				ExternalID: externalID(r.Key), Generation: 1, UpdatedAt: s.now().UTC()}
			if err := putObject(tx, obj, store.AnyRevision); err != nil {
				return err
			}
		}
		_, err := tx.Put(bucketMeta, keySeeded, []byte("1"), store.AnyRevision)
		return err
	})
}

// Close releases the state file.
func (s *Simulator) Close() error { return s.st.Close() }

// SetSupervisor overrides a Supervisor's facts (e.g. make it unreachable).
func (s *Simulator) SetSupervisor(sup SeedSupervisor) {
	s.mu.Lock()
	s.supervisors[sup.Name] = sup
	s.mu.Unlock()
	s.notify(target.Change{})
}

// SetVCFAVersion changes the reported VCF Automation version.
func (s *Simulator) SetVCFAVersion(v string) {
	s.mu.Lock()
	s.seed.VCFAVersion = v
	s.mu.Unlock()
	s.notify(target.Change{})
}
