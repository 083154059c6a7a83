package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// ResourcesFrom places rendered documents on their targets as resource
// records owned by version. Secrets go into the service's namespace on
// every Supervisor the service runs on (sups, by serviceSupervisors), or
// stay with the Service Manager when the inventory has no Supervisor.
func ResourcesFrom(svc *Service, version string, docs []*Document, sups []string, now time.Time) ([]*Resource, error) {
	parsed, err := ParseDocs(docs)
	if err != nil {
		return nil, err
	}
	return PlaceResources(svc, version, docs, parsed, sups, now)
}

// ParsedDoc is a rendered document parsed, with its hash.
type ParsedDoc struct {
	doc  map[string]any
	hash string
}

func ParseDocs(docs []*Document) ([]ParsedDoc, error) {
	parsed := make([]ParsedDoc, len(docs))
	errs := make([]error, len(docs))
	// Thousands of documents: parse on every core.
	onEveryCore(len(docs), func(i int) {
		var m map[string]any
		if errs[i] = yaml.Unmarshal(docs[i].YAML, &m); errs[i] == nil {
			parsed[i] = ParsedDoc{doc: m, hash: DocHash(m)}
		}
	})
	for i, err := range errs {
		if err != nil {
			d := docs[i]
			return nil, fmt.Errorf("rendered %s %q (document %d): %w", d.Kind, d.Name, d.Index, err)
		}
	}
	return parsed, nil
}

// onEveryCore calls fn for 0..n-1 from up to GOMAXPROCS goroutines (one
// per 64 items at least) and returns when all calls did.
func onEveryCore(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/64+1)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// PlaceResources places parsed documents; each record gets its own copy
// of its document (parsed documents are shared by the steps of a run).
func PlaceResources(svc *Service, version string, docs []*Document, parsed []ParsedDoc, sups []string, now time.Time) ([]*Resource, error) {
	var out []*Resource
	seen := map[string]bool{}
	add := func(r *Resource) error {
		if seen[r.ID] {
			return fmt.Errorf("two rendered resources are both %s: names must be unique per kind and Supervisor: %w", r.ID, ErrInvalidArgument)
		}
		seen[r.ID] = true
		out = append(out, r)
		return nil
	}
	for i, d := range docs {
		doc, hash := CopyJSON(parsed[i].doc).(map[string]any), parsed[i].hash
		place, err := target.Place(d.Kind, doc, d.Name)
		if err != nil {
			return nil, fmt.Errorf("rendered document %d: %w: %w", d.Index, err, ErrInvalidArgument)
		}
		// Every resource's custom resource lives in the service's namespace
		// (docs/decisions.md, "Resource namespaces"); for Secrets and
		// Supervisor kinds it is also their namespace on the Supervisor.
		base := Resource{
			Namespace: svc.Namespace,
			ServiceID: svc.ID, Kind: d.Kind, APIVersion: d.APIVersion, Name: d.Name,
			Region: d.Region, Supervisor: d.Supervisor, Doc: doc, Hash: hash,
			OwnerVersion: version, Status: target.StatusBusy, Message: "Waiting to be applied", LastModified: now,
		}
		switch {
		case place.PerSupervisor:
			scopes := sups
			system := target.SystemSupervisor
			if len(scopes) == 0 {
				scopes, system = []string{""}, target.SystemServiceManager
			}
			for _, sup := range scopes {
				r := base
				r.Supervisor = sup
				r.ID = d.Kind + "/" + sup + "/" + d.Name
				r.Target = target.Key{System: system, Scope: sup, Kind: d.Kind, Identity: target.SecretIdentity(svc.Namespace, place.Identity)}
				if err := add(&r); err != nil {
					return nil, err
				}
			}
			continue
		case place.System == target.SystemSupervisor:
			if d.Supervisor == "" {
				return nil, fmt.Errorf("rendered %s %q has no spec.supervisor: Supervisor resources must name their Supervisor: %w", d.Kind, d.Name, ErrInvalidArgument)
			}
			base.Target = target.Key{System: place.System, Scope: d.Supervisor, Kind: d.Kind, Identity: place.Identity}
		case place.System == target.SystemVCenter:
			spec, _ := doc["spec"].(map[string]any)
			scope, _ := spec["vcenter"].(string)
			if scope == "" {
				scope = d.Region
			}
			base.Target = target.Key{System: place.System, Scope: scope, Kind: d.Kind, Identity: place.Identity}
		default:
			base.Target = target.Key{System: place.System, Kind: d.Kind, Identity: place.Identity}
		}
		r := base
		r.ID = d.Kind + "/" + r.Supervisor + "/" + d.Name
		if err := add(&r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CopyJSON deep-copies a decoded JSON value.
func CopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return t
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = CopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = CopyJSON(e)
		}
		return out
	}
	return v
}

func DocHash(doc map[string]any) string {
	raw, _ := json.Marshal(doc)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// DocYAML renders a resource document for a plan; empty when there is none.
func DocYAML(doc map[string]any) string {
	if doc == nil {
		return ""
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return ""
	}
	return string(b)
}
