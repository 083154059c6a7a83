package lifecycle

import "fmt"

// Inventory is the platform inventory (api.md `Inventory`): the regions,
// their Supervisors and what the renderer exposes to templates about them.
// internal/wire translates it to and from the generated message.
type Inventory struct {
	Regions []Region
	// RolloutStrategies are the provider's named strategies; the one named
	// DefaultRollout applies to every upgrade that names none (a request
	// may still ask for none).
	RolloutStrategies []RolloutStrategy
	DefaultRollout    string
}

// Region is one region of the inventory.
type Region struct {
	Name           string
	Supervisors    []Supervisor
	StorageClasses []string
}

// Supervisor is one Supervisor of the inventory.
type Supervisor struct {
	Name                string
	ID                  string
	Version             string
	DefaultStorageClass string
	VCenterName         string
	VCenterID           string
	ManagementServices  map[string]ManagementService
	KubernetesVersion   string
	// Kubeconfig reaches the Supervisor's API server (Kubernetes driver).
	Kubeconfig string
	// Labels select the Supervisor into rollout waves.
	Labels map[string]string
	// Window, when set, is when rollouts may move the Supervisor.
	Window *MaintenanceWindow
}

// ManagementService is a management endpoint of a Supervisor.
type ManagementService struct {
	Addresses []string
	CAChain   string
	Ports     map[string]ServicePort
}

// ServicePort is one port of a management service.
type ServicePort struct {
	Port     int32
	Protocol string
}

// RegionList is the inventory's regions; none for a nil inventory.
func (inv *Inventory) RegionList() []Region {
	if inv == nil {
		return nil
	}
	return inv.Regions
}

// ValidateInventory checks the fields api.md marks required.
func ValidateInventory(inv *Inventory) error {
	regions := map[string]bool{}
	sups := map[string]bool{}
	for i, r := range inv.RegionList() {
		where := fmt.Sprintf("inventory.regions[%d]", i)
		if r.Name == "" {
			return fmt.Errorf("%s.name is required: %w", where, ErrInvalidArgument)
		}
		if regions[r.Name] {
			return fmt.Errorf("%s: region %q appears twice: %w", where, r.Name, ErrInvalidArgument)
		}
		regions[r.Name] = true
		for j, s := range r.Supervisors {
			w := fmt.Sprintf("%s.supervisors[%d]", where, j)
			for _, f := range []struct{ name, value string }{{"name", s.Name}, {"id", s.ID}, {"version", s.Version}} {
				if f.value == "" {
					return fmt.Errorf("%s.%s is required: %w", w, f.name, ErrInvalidArgument)
				}
			}
			if sups[s.Name] {
				return fmt.Errorf("%s: supervisor %q appears twice: %w", w, s.Name, ErrInvalidArgument)
			}
			sups[s.Name] = true
		}
	}
	return nil
}
