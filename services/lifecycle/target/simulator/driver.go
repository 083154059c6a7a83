package simulator

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

func getObject(tx store.Tx, k target.Key) (target.Object, int64, error) {
	rec, err := tx.Get(bucketObjects, k.String())
	if errors.Is(err, store.ErrNotFound) {
		return target.Object{}, 0, fmt.Errorf("%s: %w", k, target.ErrNotFound)
	}
	if err != nil {
		return target.Object{}, 0, err
	}
	var obj target.Object
	if err := json.Unmarshal(rec.Value, &obj); err != nil {
		return target.Object{}, 0, fmt.Errorf("decode %s: %w", k, err)
	}
	return obj, rec.Revision, nil
}

func putObject(tx store.Tx, obj target.Object, expect int64) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encode %s: %w", obj.Key, err)
	}
	_, err = tx.Put(bucketObjects, obj.String(), raw, expect)
	return err
}

func externalID(k target.Key) string {
	sum := sha256.Sum256([]byte(k.String()))
	return fmt.Sprintf("urn:sim:%s:%x", strings.ToLower(k.Kind), sum[:8])
}

// Apply implements target.Driver.
func (s *Simulator) Apply(ctx context.Context, d target.Desired) (target.Object, error) {
	if err := ctx.Err(); err != nil {
		return target.Object{}, err
	}
	f := s.fault("apply", d.Key)
	if f != nil {
		if err := faultError(f, "apply", d.Key); err != nil {
			return target.Object{}, err
		}
	}
	var out target.Object
	// Batch: the controllers apply thousands of objects from parallel
	// goroutines; concurrent writes share one commit.
	err := s.st.Batch(ctx, func(tx store.Tx) error {
		now := s.now().UTC()
		obj, rev, err := getObject(tx, d.Key)
		switch {
		case errors.Is(err, target.ErrNotFound):
			obj = target.Object{Key: d.Key, ExternalID: externalID(d.Key), Generation: 1, Message: "Created"}
			rev = store.MustNotExist
		case err != nil:
			return err
		case obj.Owner.IsZero():
			if err := immutable(obj, d); err != nil {
				return fmt.Errorf("adopt %s: %w", d.Key, err)
			}
			obj.Adopted = true
			obj.Message = "Adopted existing resource; ownership declared"
			if !reflect.DeepEqual(obj.Spec, d.Spec) {
				obj.Generation++
				obj.Message = "Adopted existing resource; configuration drift reconciled"
			}
		case obj.Owner.ServiceID != d.Owner.ServiceID:
			return fmt.Errorf("%s is owned by service %s: %w", d.Key, obj.Owner.ServiceID, target.ErrOwnedByOther)
		default:
			if err := immutable(obj, d); err != nil {
				return fmt.Errorf("update %s: %w", d.Key, err)
			}
			if !reflect.DeepEqual(obj.Spec, d.Spec) {
				obj.Generation++
				obj.Message = "Updated"
			}
		}
		obj.Namespace, obj.Spec, obj.Owner = d.Namespace, d.Spec, d.Owner
		obj.Finalizers = slices.Clone(d.Finalizers)
		obj.UpdatedAt = now
		obj.Status = target.StatusHealthy
		if f != nil {
			switch f.Effect {
			case EffectSlow:
				obj.Status = target.StatusBusy
				obj.Message = "Waiting for the target to finish"
				obj.UpdatedAt = now.Add(time.Duration(f.Delay))
			case EffectUnhealthy:
				obj.Status = target.StatusUnhealthy
				obj.Message = nonEmpty(f.Message, "the target reports the resource unhealthy")
			}
		}
		obj.ReadyConditions = readyConditions(d)
		out = obj
		return putObject(tx, obj, rev)
	})
	if err != nil {
		return target.Object{}, fmt.Errorf("apply %s: %w", d.Key, err)
	}
	s.notify(target.Change{Key: d.Key, ServiceID: d.Owner.ServiceID})
	return s.settle(out), nil
}

// immutable enforces the element-type docs' immutability rules: a
// VcfaServiceAccount's spec never changes after creation, a RelyingParty's
// isPublic neither. A resource that would need such a change cannot be
// adopted or updated in place.
func immutable(obj target.Object, d target.Desired) error {
	spec := func(m map[string]any) map[string]any { s, _ := m["spec"].(map[string]any); return s }
	switch d.Kind {
	case "VcfaServiceAccount":
		if !reflect.DeepEqual(spec(obj.Spec), spec(d.Spec)) {
			return fmt.Errorf("VcfaServiceAccount spec is immutable and differs from the existing account; delete it or match its spec: %w", target.ErrIncompatible)
		}
	case "RelyingParty":
		if a, b := spec(obj.Spec)["isPublic"], spec(d.Spec)["isPublic"]; a != nil && !reflect.DeepEqual(a, b) {
			return fmt.Errorf("RelyingParty isPublic cannot change after creation (existing %v, wanted %v): %w", a, b, target.ErrIncompatible)
		}
	}
	return nil
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// settle turns a slow resource Healthy once its delay passed.
func (s *Simulator) settle(obj target.Object) target.Object {
	if obj.Status == target.StatusBusy && !s.now().Before(obj.UpdatedAt) {
		obj.Status = target.StatusHealthy
		obj.Message = "Ready"
	}
	return obj
}

// readyConditions simulates a SupervisorService's resolved ready conditions.
func readyConditions(d target.Desired) map[string]string {
	if d.Kind != "SupervisorService" {
		return nil
	}
	spec, _ := d.Spec["spec"].(map[string]any)
	conds, _ := spec["readyConditions"].([]any)
	if len(conds) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		name, _ := cm["name"].(string)
		if name == "" {
			continue
		}
		sum := sha256.Sum256([]byte(d.String() + "/" + name))
		if strings.Contains(strings.ToLower(name), "ip") {
			out[name] = fmt.Sprintf("10.%d.%d.%d", sum[0], sum[1], sum[2]|1)
		} else {
			out[name] = "simulated-" + name + "-" + fmt.Sprintf("%x", sum[:4])
		}
	}
	return out
}

// Get implements target.Driver.
func (s *Simulator) Get(ctx context.Context, k target.Key) (target.Object, error) {
	if err := ctx.Err(); err != nil {
		return target.Object{}, err
	}
	if f := s.fault("get", k); f != nil {
		if err := faultError(f, "get", k); err != nil {
			return target.Object{}, err
		}
	}
	rec, err := s.st.Get(ctx, bucketObjects, k.String())
	if errors.Is(err, store.ErrNotFound) {
		return target.Object{}, fmt.Errorf("%s: %w", k, target.ErrNotFound)
	}
	if err != nil {
		return target.Object{}, err
	}
	var obj target.Object
	if err := json.Unmarshal(rec.Value, &obj); err != nil {
		return target.Object{}, fmt.Errorf("decode %s: %w", k, err)
	}
	return s.settle(obj), nil
}

// Transfer implements target.Driver.
func (s *Simulator) Transfer(ctx context.Context, k target.Key, owner target.Owner, finalizers []string) (target.Object, error) {
	if f := s.fault("transfer", k); f != nil {
		if err := faultError(f, "transfer", k); err != nil {
			return target.Object{}, err
		}
	}
	var out target.Object
	err := s.st.Batch(ctx, func(tx store.Tx) error {
		obj, rev, err := getObject(tx, k)
		if err != nil {
			return err
		}
		if !obj.Owner.IsZero() && obj.Owner.ServiceID != owner.ServiceID {
			return fmt.Errorf("%s is owned by service %s: %w", k, obj.Owner.ServiceID, target.ErrOwnedByOther)
		}
		obj.Owner, obj.Finalizers, obj.UpdatedAt = owner, slices.Clone(finalizers), s.now().UTC()
		out = obj
		return putObject(tx, obj, rev)
	})
	if err != nil {
		return target.Object{}, fmt.Errorf("transfer %s: %w", k, err)
	}
	s.notify(target.Change{Key: k, ServiceID: owner.ServiceID})
	return s.settle(out), nil
}

// Delete implements target.Driver. Deleting an absent resource succeeds.
func (s *Simulator) Delete(ctx context.Context, k target.Key) error {
	if f := s.fault("delete", k); f != nil {
		if err := faultError(f, "delete", k); err != nil {
			return err
		}
	}
	var owner string
	err := s.st.Batch(ctx, func(tx store.Tx) error {
		owner = "" // a batch may run this again
		obj, rev, err := getObject(tx, k)
		if errors.Is(err, target.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		owner = obj.Owner.ServiceID
		return tx.Delete(bucketObjects, k.String(), rev)
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", k, err)
	}
	if owner != "" {
		s.notify(target.Change{Key: k, ServiceID: owner})
	}
	return nil
}

// Release implements target.Driver.
func (s *Simulator) Release(ctx context.Context, k target.Key) error {
	if f := s.fault("release", k); f != nil {
		if err := faultError(f, "release", k); err != nil {
			return err
		}
	}
	var owner string
	err := s.st.Batch(ctx, func(tx store.Tx) error {
		owner = "" // a batch may run this again
		obj, rev, err := getObject(tx, k)
		if errors.Is(err, target.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		owner = obj.Owner.ServiceID
		obj.Owner, obj.Finalizers, obj.UpdatedAt = target.Owner{}, nil, s.now().UTC()
		return putObject(tx, obj, rev)
	})
	if err != nil {
		return fmt.Errorf("release %s: %w", k, err)
	}
	if owner != "" {
		s.notify(target.Change{Key: k, ServiceID: owner})
	}
	return nil
}

// Stage implements target.Driver.
func (s *Simulator) Stage(ctx context.Context, d target.Desired) (target.Staged, error) {
	if err := ctx.Err(); err != nil {
		return target.Staged{}, err
	}
	if f := s.fault("stage", d.Key); f != nil && (f.Effect == EffectUnreachable || f.Effect == EffectFail) {
		return target.Staged{Reachable: f.Effect != EffectUnreachable, Message: faultError(f, "stage", d.Key).Error()}, nil
	}
	req, err := requests(d)
	if err != nil {
		return target.Staged{}, err
	}
	return target.Staged{Reachable: true, Requested: req}, nil
}

// Secrets implements target.Driver.
func (s *Simulator) Secrets(ctx context.Context, supervisor, namespace string) (map[string]map[string][]byte, error) {
	k := target.Key{System: target.SystemSupervisor, Scope: supervisor, Kind: "Secret"}
	if f := s.fault("get", k); f != nil && f.Effect == EffectUnreachable {
		return nil, faultError(f, "get secrets", k)
	}
	recs, err := s.st.List(ctx, bucketObjects, path.Join(target.SystemSupervisor, supervisor, "Secret")+"/")
	if err != nil {
		return nil, err
	}
	out := map[string]map[string][]byte{}
	for _, rec := range recs {
		var obj target.Object
		if err := json.Unmarshal(rec.Value, &obj); err != nil {
			return nil, err
		}
		// Secret identities are "<namespace>/<name>" (SecretIdentity).
		name, ok := strings.CutPrefix(obj.Identity, namespace+"/")
		if !ok {
			continue
		}
		out[name] = secretData(obj.Spec)
	}
	return out, nil
}

func secretData(doc map[string]any) map[string][]byte {
	out := map[string][]byte{}
	if data, ok := doc["data"].(map[string]any); ok {
		for k, v := range data {
			if s, ok := v.(string); ok {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					out[k] = b
				}
			}
		}
	}
	if data, ok := doc["stringData"].(map[string]any); ok {
		for k, v := range data {
			if s, ok := v.(string); ok {
				out[k] = []byte(s)
			}
		}
	}
	return out
}

// List implements target.Driver.
func (s *Simulator) List(ctx context.Context, serviceID string) ([]target.Object, error) {
	recs, err := s.st.List(ctx, bucketObjects, "")
	if err != nil {
		return nil, err
	}
	var out []target.Object
	for _, rec := range recs {
		var obj target.Object
		if err := json.Unmarshal(rec.Value, &obj); err != nil {
			return nil, err
		}
		if serviceID == "" || obj.Owner.ServiceID == serviceID {
			out = append(out, s.settle(obj))
		}
	}
	return out, nil
}
