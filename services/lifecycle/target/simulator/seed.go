package simulator

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Seed describes the simulated platform.
type Seed struct {
	VCFAVersion      string           `json:"vcfaVersion,omitempty"`
	SupportedAPIs    []string         `json:"supportedApis,omitempty"`
	DefaultAvailable *target.Quota    `json:"defaultAvailable,omitempty"`
	Supervisors      []SeedSupervisor `json:"supervisors,omitempty"`
	// Resources exist on the targets before any service: adoptable.
	Resources []SeedResource `json:"resources,omitempty"`
	Faults    []Fault        `json:"faults,omitempty"`
}

// SeedSupervisor overrides one Supervisor's facts.
type SeedSupervisor struct {
	Name          string        `json:"name"`
	Unreachable   bool          `json:"unreachable,omitempty"`
	Available     *target.Quota `json:"available,omitempty"`
	SupportedAPIs []string      `json:"supportedApis,omitempty"`
}

// SeedResource is a pre-existing, unowned resource.
type SeedResource struct {
	target.Key
	Namespace string         `json:"namespace,omitempty"`
	Spec      map[string]any `json:"spec"`
}

// Duration is a time.Duration that reads "2s" from YAML/JSON.
type Duration time.Duration

// UnmarshalJSON accepts "1.5s" or nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want \"1s\" or nanoseconds, got %s", b)
	}
	*d = Duration(n)
	return nil
}

// MarshalJSON writes "1.5s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// LoadSeed reads a seed file (YAML or JSON).
func LoadSeed(file string) (*Seed, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("simulator seed: %w", err)
	}
	var s Seed
	if err := yaml.UnmarshalStrict(raw, &s); err != nil {
		return nil, fmt.Errorf("simulator seed %s: %w", file, err)
	}
	return &s, s.validate()
}

func (s *Seed) validate() error {
	for i, f := range s.Faults {
		if err := f.validate(); err != nil {
			return fmt.Errorf("faults[%d]: %w", i, err)
		}
	}
	for i, r := range s.Resources {
		if r.System == "" || r.Kind == "" || r.Identity == "" {
			return fmt.Errorf("resources[%d]: system, kind and identity are required", i)
		}
	}
	return nil
}
