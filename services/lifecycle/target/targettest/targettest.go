// Package targettest is the contract every target.Driver must pass.
package targettest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Opener returns a driver whose targets already hold preexisting (unowned)
// resources. Within one test, a second call must return a driver over the
// same target state (a restart) and may ignore preexisting.
type Opener func(t *testing.T, preexisting []target.Object) target.Driver

// Subject is what the ownership half of the contract exercises: a kind
// of resource the driver under test reaches. Run uses VCF Automation roles
// and service accounts; a driver that reaches only Supervisors runs the
// contract with SupervisorSecrets.
type Subject struct {
	// Key of an ordinary resource; Spec returns its document holding the
	// given rights (distinct rights, distinct documents).
	Key  target.Key
	Spec func(rights ...string) map[string]any
	// Namespace the resources go to (Supervisor resources), if any.
	Namespace string
	// Other returns the key of another resource of the same kind.
	Other func(identity string) target.Key
	// Immutable is a resource whose existing document cannot be adopted
	// with Wanted (ErrIncompatible) but can be with itself. Existing is
	// also what Get reports of it before adoption.
	Immutable        target.Key
	Existing, Wanted map[string]any
}

// VCFA is the subject Run uses.
var VCFA = Subject{
	Key:       role,
	Spec:      roleSpec,
	Other:     func(id string) target.Key { return target.Key{System: target.SystemVCFA, Kind: "Role", Identity: id} },
	Immutable: target.Key{System: target.SystemVCFA, Kind: "VcfaServiceAccount", Identity: "arcturus-service-account"},
	Existing:  map[string]any{"spec": map[string]any{"clientName": "arcturus-service-account", "roleName": "Old Role"}},
	Wanted:    map[string]any{"spec": map[string]any{"clientName": "arcturus-service-account", "roleName": "Arcturus Service Agent"}},
}

// SupervisorSecrets is the subject of drivers that reach Supervisors:
// Secrets in a service namespace on Supervisor sv1; an immutable Secret
// cannot take other data.
var SupervisorSecrets = Subject{
	Key:       secretKey("arcturus-rights"),
	Namespace: "svc-contract",
	Spec: func(rights ...string) map[string]any {
		data := map[string]any{}
		for _, r := range rights {
			data[r] = "granted"
		}
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "arcturus-rights"}, "stringData": data}
	},
	Other:     func(id string) target.Key { return secretKey(id) },
	Immutable: secretKey("arcturus-sealed"),
	Existing: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "arcturus-sealed"},
		"data": map[string]any{"token": "b2xk"}, "type": "Opaque", "immutable": true},
	Wanted: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "arcturus-sealed"},
		"data": map[string]any{"token": "bmV3"}, "type": "Opaque", "immutable": true},
}

func secretKey(name string) target.Key {
	return target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "Secret", Identity: target.SecretIdentity("svc-contract", name)}
}

// Run runs the whole contract with the VCFA subject.
func Run(t *testing.T, open Opener) {
	t.Helper()
	RunSubject(t, open, VCFA)
}

// RunSubject runs the whole contract with the given subject.
func RunSubject(t *testing.T, open Opener, s Subject) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Opener, Subject)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"UpdateBumpsGeneration", testUpdate},
		{"AdoptsUnownedResource", testAdopt},
		{"RefusesResourceOfAnotherService", testOwnedByOther},
		{"RefusesIncompatibleAdoption", testIncompatible},
		{"TransferKeepsSpec", testTransfer},
		{"DeleteAndRelease", testDeleteRelease},
		{"ListByOwner", testList},
		{"SecretsByNamespace", testSecrets},
		{"StateSurvivesRestart", testRestart},
		{"StageAndFacts", testStage},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open, s) })
	}
}

var (
	ownerA = target.Owner{ServiceID: "svc-a", Version: "1.0.0"}
	ownerB = target.Owner{ServiceID: "svc-b", Version: "1.0.0"}
	role   = target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "Arcturus Administrator"}
)

func roleSpec(rights ...string) map[string]any {
	rs := make([]any, len(rights))
	for i, r := range rights {
		rs[i] = r
	}
	return map[string]any{"apiVersion": "services.vcfa.broadcom.com/v2", "kind": "GlobalRole",
		"spec": map[string]any{"name": "Arcturus Administrator", "rights": rs}}
}

func testCreateAndGet(t *testing.T, open Opener, s Subject) {
	d := open(t, nil)
	ctx := context.Background()
	_, err := d.Get(ctx, s.Key)
	require.ErrorIs(t, err, target.ErrNotFound)
	obj, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA, Finalizers: []string{"cleanup"}})
	require.NoError(t, err)
	require.Equal(t, target.StatusHealthy, obj.Status)
	require.False(t, obj.Adopted)
	require.NotEmpty(t, obj.ExternalID)
	got, err := d.Get(ctx, s.Key)
	require.NoError(t, err)
	require.Equal(t, ownerA, got.Owner)
	require.Equal(t, []string{"cleanup"}, got.Finalizers)
	require.Equal(t, s.Spec("R1"), got.Spec)
}

func testUpdate(t *testing.T, open Opener, s Subject) {
	d := open(t, nil)
	ctx := context.Background()
	first, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA})
	require.NoError(t, err)
	same, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA})
	require.NoError(t, err)
	require.Equal(t, first.Generation, same.Generation, "re-applying the same spec changes nothing")
	changed, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1", "R2"), Owner: target.Owner{ServiceID: "svc-a", Version: "2.0.0"}})
	require.NoError(t, err)
	require.Greater(t, changed.Generation, first.Generation)
	require.Equal(t, "2.0.0", changed.Owner.Version, "a newer version of the same service may update")
}

func testAdopt(t *testing.T, open Opener, s Subject) {
	d := open(t, []target.Object{{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("OLD")}})
	ctx := context.Background()
	pre, err := d.Get(ctx, s.Key)
	require.NoError(t, err)
	require.True(t, pre.Owner.IsZero())
	obj, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("NEW"), Owner: ownerA, Finalizers: []string{"cleanup"}})
	require.NoError(t, err)
	require.True(t, obj.Adopted)
	require.Equal(t, ownerA, obj.Owner)
	require.Equal(t, s.Spec("NEW"), obj.Spec, "adoption reconciles drift")
	require.Equal(t, pre.ExternalID, obj.ExternalID, "adoption keeps the existing resource")
}

func testOwnedByOther(t *testing.T, open Opener, s Subject) {
	d := open(t, nil)
	ctx := context.Background()
	_, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA})
	require.NoError(t, err)
	_, err = d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R2"), Owner: ownerB})
	require.ErrorIs(t, err, target.ErrOwnedByOther)
	_, err = d.Transfer(ctx, s.Key, ownerB, nil)
	require.ErrorIs(t, err, target.ErrOwnedByOther)
	got, err := d.Get(ctx, s.Key)
	require.NoError(t, err)
	require.Equal(t, s.Spec("R1"), got.Spec, "a refused apply changes nothing")
}

func testIncompatible(t *testing.T, open Opener, s Subject) {
	// An existing resource whose document cannot change into the wanted
	// one cannot be adopted, and nothing changes on the target.
	k := s.Immutable
	d := open(t, []target.Object{{Key: k, Namespace: s.Namespace, Spec: s.Existing}})
	ctx := context.Background()
	_, err := d.Apply(ctx, target.Desired{Key: k, Namespace: s.Namespace, Owner: ownerA, Spec: s.Wanted})
	require.ErrorIs(t, err, target.ErrIncompatible)
	got, err := d.Get(ctx, k)
	require.NoError(t, err)
	require.True(t, got.Owner.IsZero())
	require.Equal(t, s.Existing, got.Spec)
	// The same spec is adoptable.
	obj, err := d.Apply(ctx, target.Desired{Key: k, Namespace: s.Namespace, Owner: ownerA, Spec: s.Existing})
	require.NoError(t, err)
	require.True(t, obj.Adopted)
}

func testTransfer(t *testing.T, open Opener, s Subject) {
	d := open(t, nil)
	ctx := context.Background()
	_, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA, Finalizers: []string{"v1"}})
	require.NoError(t, err)
	next := target.Owner{ServiceID: "svc-a", Version: "2.0.0"}
	obj, err := d.Transfer(ctx, s.Key, next, []string{"v2"})
	require.NoError(t, err)
	require.Equal(t, next, obj.Owner)
	require.Equal(t, []string{"v2"}, obj.Finalizers)
	require.Equal(t, s.Spec("R1"), obj.Spec)
	_, err = d.Transfer(ctx, s.Other("absent"), next, nil)
	require.ErrorIs(t, err, target.ErrNotFound)
}

func testDeleteRelease(t *testing.T, open Opener, s Subject) {
	d := open(t, nil)
	ctx := context.Background()
	_, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA})
	require.NoError(t, err)
	require.NoError(t, d.Delete(ctx, s.Key))
	_, err = d.Get(ctx, s.Key)
	require.ErrorIs(t, err, target.ErrNotFound)
	require.NoError(t, d.Delete(ctx, s.Key), "deleting an absent resource succeeds")

	_, err = d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA, Finalizers: []string{"x"}})
	require.NoError(t, err)
	require.NoError(t, d.Release(ctx, s.Key))
	got, err := d.Get(ctx, s.Key)
	require.NoError(t, err, "release leaves the target resource intact")
	require.True(t, got.Owner.IsZero())
	require.Empty(t, got.Finalizers)
}

func testList(t *testing.T, open Opener, s Subject) {
	d := open(t, []target.Object{{Key: s.Other("unowned"), Namespace: s.Namespace, Spec: s.Spec()}})
	ctx := context.Background()
	for i, k := range []target.Key{s.Key, s.Other("agent")} {
		owner := ownerA
		if i == 1 {
			owner = ownerB
		}
		_, err := d.Apply(ctx, target.Desired{Key: k, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: owner})
		require.NoError(t, err)
	}
	a, err := d.List(ctx, "svc-a")
	require.NoError(t, err)
	require.Len(t, a, 1)
	require.Equal(t, s.Key, a[0].Key)
}

func testSecrets(t *testing.T, open Opener, _ Subject) {
	d := open(t, nil)
	ctx := context.Background()
	put := func(ns, name string, doc map[string]any) {
		_, err := d.Apply(ctx, target.Desired{Key: target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "Secret", Identity: target.SecretIdentity(ns, name)},
			Namespace: ns, Spec: doc, Owner: ownerA})
		require.NoError(t, err)
	}
	put("svc-a", "ca", map[string]any{"data": map[string]any{"ca.crt": "UEVN"}}) // base64 "PEM"
	put("svc-a", "plain", map[string]any{"stringData": map[string]any{"token": "t"}})
	put("svc-b", "ca", map[string]any{"data": map[string]any{"ca.crt": "T1RIRVI="}})
	got, err := d.Secrets(ctx, "sv1", "svc-a")
	require.NoError(t, err)
	require.Equal(t, map[string]map[string][]byte{"ca": {"ca.crt": []byte("PEM")}, "plain": {"token": []byte("t")}}, got)
	none, err := d.Secrets(ctx, "sv2", "svc-a")
	require.NoError(t, err)
	require.Empty(t, none)
}

func testRestart(t *testing.T, open Opener, s Subject) {
	d := open(t, nil)
	ctx := context.Background()
	_, err := d.Apply(ctx, target.Desired{Key: s.Key, Namespace: s.Namespace, Spec: s.Spec("R1"), Owner: ownerA, Finalizers: []string{"f"}})
	require.NoError(t, err)
	if c, ok := d.(interface{ Close() error }); ok {
		require.NoError(t, c.Close())
	}
	d2 := open(t, nil)
	got, err := d2.Get(ctx, s.Key)
	require.NoError(t, err)
	require.Equal(t, ownerA, got.Owner)
	require.Equal(t, []string{"f"}, got.Finalizers)
}

func testStage(t *testing.T, open Opener, _ Subject) {
	d := open(t, nil)
	ctx := context.Background()
	k := target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "SupervisorService", Identity: "arcturus.example.com"}
	st, err := d.Stage(ctx, target.Desired{Key: k, Spec: map[string]any{"kind": "SupervisorService"}, Owner: ownerA})
	require.NoError(t, err)
	require.True(t, st.Reachable)
	require.Positive(t, st.Requested.CPUMillicores, "a SupervisorService consumes Supervisor capacity")
	_, err = d.Get(ctx, k)
	require.ErrorIs(t, err, target.ErrNotFound, "staging creates nothing")
	facts, err := d.Facts(ctx, []string{"sv1", "never-used"})
	require.NoError(t, err)
	require.NotEmpty(t, facts.VCFAVersion)
	require.Len(t, facts.Supervisors, 2, "every named Supervisor is reported")
	require.Equal(t, "sv1", facts.Supervisors[0].Name)
}
