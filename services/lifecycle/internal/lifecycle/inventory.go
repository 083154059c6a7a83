package lifecycle

// Inventory is the platform inventory (api.md `Inventory`): the regions,
// their Supervisors and what the renderer exposes to templates about them.
// internal/wire translates it to and from the generated message.
type Inventory struct {
	Regions []Region
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
