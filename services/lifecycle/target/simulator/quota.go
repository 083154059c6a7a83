package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// RequestsAnnotation lets a document declare what it consumes on its
// Supervisor ("cpu=2000m,memory=4Gi,storage=20Gi"); without it a
// SupervisorService requests DefaultRequest. Simulator-specific.
const RequestsAnnotation = "simulator.vcfsm.dev/requests"

// DefaultRequest is what a SupervisorService consumes by default.
var DefaultRequest = target.Quota{CPUMillicores: 500, MemoryBytes: 512 << 20, StorageBytes: 1 << 30}

// DefaultAvailable is a Supervisor's capacity when the seed names none.
var DefaultAvailable = target.Quota{CPUMillicores: 64000, MemoryBytes: 256 << 30, StorageBytes: 4 << 40}

func requests(d target.Desired) (target.Quota, error) {
	if d.Kind != "SupervisorService" {
		return target.Quota{}, nil
	}
	meta, _ := d.Spec["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	spec, _ := ann[RequestsAnnotation].(string)
	if spec == "" {
		return DefaultRequest, nil
	}
	return ParseQuota(spec)
}

// ParseQuota reads "cpu=2000m,memory=4Gi,storage=20Gi".
func ParseQuota(spec string) (target.Quota, error) {
	var q target.Quota
	for _, item := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return q, fmt.Errorf("quota %q: want name=value", item)
		}
		switch k {
		case "cpu":
			n, err := parseCPU(v)
			if err != nil {
				return q, err
			}
			q.CPUMillicores = n
		case "memory", "storage":
			n, err := parseBytes(v)
			if err != nil {
				return q, err
			}
			if k == "memory" {
				q.MemoryBytes = n
			} else {
				q.StorageBytes = n
			}
		default:
			return q, fmt.Errorf("quota %q: unknown resource %q (cpu, memory, storage)", spec, k)
		}
	}
	return q, nil
}

func parseCPU(v string) (int64, error) {
	if m, ok := strings.CutSuffix(v, "m"); ok {
		var n int64
		_, err := fmt.Sscanf(m, "%d", &n)
		return n, err
	}
	var n float64
	if _, err := fmt.Sscanf(v, "%g", &n); err != nil {
		return 0, fmt.Errorf("cpu %q: %w", v, err)
	}
	return int64(n * 1000), nil
}

func parseBytes(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			var x int64
			if _, err := fmt.Sscanf(n, "%d", &x); err != nil {
				return 0, fmt.Errorf("size %q: %w", v, err)
			}
			return x * u.mult, nil
		}
	}
	var x int64
	if _, err := fmt.Sscanf(v, "%d", &x); err != nil {
		return 0, fmt.Errorf("size %q: %w", v, err)
	}
	return x, nil
}

// Facts implements target.Driver. A Supervisor the seed does not name has
// the default capacity less what its resources consume. Only the objects
// of the Supervisors asked about are read (a rollout's gate asks about
// one wave's: reading every Supervisor's objects made each gate cost the
// whole fleet).
func (s *Simulator) Facts(ctx context.Context, supervisors []string) (target.Facts, error) {
	used := map[string]target.Quota{}
	for _, n := range slices.Compact(slices.Sorted(slices.Values(supervisors))) {
		recs, err := s.st.List(ctx, bucketObjects, target.SystemSupervisor+"/"+n+"/")
		if err != nil {
			return target.Facts{}, err
		}
		var u target.Quota
		for _, rec := range recs {
			var obj target.Object
			if err := json.Unmarshal(rec.Value, &obj); err != nil {
				return target.Facts{}, err
			}
			req, _ := requests(target.Desired{Key: obj.Key, Spec: obj.Spec})
			u.CPUMillicores += req.CPUMillicores
			u.MemoryBytes += req.MemoryBytes
			u.StorageBytes += req.StorageBytes
		}
		used[n] = u
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	facts := target.Facts{VCFAVersion: s.seed.VCFAVersion, SupportedAPIs: slices.Clone(s.seed.SupportedAPIs)}
	for _, n := range supervisors {
		facts.Supervisors = append(facts.Supervisors, s.supervisorFacts(n, used[n]))
	}
	return facts, nil
}

func (s *Simulator) supervisorFacts(name string, used target.Quota) target.SupervisorFacts {
	sup, ok := s.supervisors[name]
	avail := *s.seed.DefaultAvailable
	apis := s.seed.SupportedAPIs
	if ok {
		if sup.Available != nil {
			avail = *sup.Available
		}
		if len(sup.SupportedAPIs) > 0 {
			apis = sup.SupportedAPIs
		}
	}
	avail.CPUMillicores -= used.CPUMillicores
	avail.MemoryBytes -= used.MemoryBytes
	avail.StorageBytes -= used.StorageBytes
	return target.SupervisorFacts{Name: name, Reachable: !ok || !sup.Unreachable, Available: avail, SupportedAPIs: slices.Clone(apis)}
}
