package lifecycle

import (
	"fmt"
	"strings"
	"time"
	// The time zone database, embedded: the images are FROM scratch, with
	// no zoneinfo on the host, and a maintenance window names an IANA time
	// zone (before, every zone but UTC was refused in the compose stack).
	_ "time/tzdata"
)

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

// ValidateInventory checks the fields api.md marks required (regions'
// name and storageClasses; Supervisors' name, id, version,
// defaultStorageClass and vcenterName), naming the field and its entry.
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
		if len(r.StorageClasses) == 0 {
			return fmt.Errorf("%s (region %s).storageClasses is required: list the region's storage classes: %w", where, r.Name, ErrInvalidArgument)
		}
		for j, s := range r.Supervisors {
			w := fmt.Sprintf("%s.supervisors[%d]", where, j)
			if s.Name != "" {
				w += " (Supervisor " + s.Name + ")"
			}
			for _, f := range []struct{ name, value string }{{"name", s.Name}, {"id", s.ID}, {"version", s.Version},
				{"defaultStorageClass", s.DefaultStorageClass}, {"vcenterName", s.VCenterName}} {
				if f.value == "" {
					return fmt.Errorf("%s.%s is required: %w", w, f.name, ErrInvalidArgument)
				}
			}
			if sups[s.Name] {
				return fmt.Errorf("%s: supervisor %q appears twice: %w", w, s.Name, ErrInvalidArgument)
			}
			if err := ValidateWindow(s.Window, w+".maintenanceWindow"); err != nil {
				return err
			}
			sups[s.Name] = true
		}
	}
	return nil
}

// weekdays are the days a maintenance window may name.
var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

// Weekday is the day a window names (any case), -1 when it names none.
func Weekday(s string) time.Weekday {
	if d, ok := weekdays[strings.ToLower(s)]; ok {
		return d
	}
	return -1
}

// ValidateWindow checks a maintenance window; where names the field.
func ValidateWindow(w *MaintenanceWindow, where string) error {
	if w == nil {
		return nil
	}
	if _, err := time.LoadLocation(w.TimeZone); err != nil || w.TimeZone == "" {
		return fmt.Errorf("%s.timeZone %q: want an IANA time zone such as Europe/Berlin or UTC: %w", where, w.TimeZone, ErrInvalidArgument)
	}
	if _, err := time.Parse("15:04", w.Start); err != nil {
		return fmt.Errorf("%s.start %q: want a time of day as HH:MM: %w", where, w.Start, ErrInvalidArgument)
	}
	if w.Duration <= 0 || w.Duration > 7*24*time.Hour {
		return fmt.Errorf("%s.duration: want a Go duration (such as 4h) above 0 and at most a week: %w", where, ErrInvalidArgument)
	}
	for _, d := range w.Days {
		if _, ok := weekdays[strings.ToLower(d)]; !ok {
			return fmt.Errorf("%s.days: %q is not a day (Mon, Tue, Wed, Thu, Fri, Sat, Sun): %w", where, d, ErrInvalidArgument)
		}
	}
	return nil
}
