package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Resources read through the kept decoded records: what a caller changes
// in what it read (nested maps and lists of the document included) does
// not show in the next read, and a write does.
func TestResourcesReadsAreCopies(t *testing.T) {
	ctx := context.Background()
	r := openRepo(t, filepath.Join(t.TempDir(), "lifecycle.db"))
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "a", Name: "a"}
	res := &lifecycle.Resource{ServiceID: svc.ID, ID: "Role/sv-1/r", Kind: "Role", Supervisor: "sv-1", Status: "Healthy",
		Finalizers: []string{"f"}, ReadyConditions: map[string]string{"Ready": "True"},
		Doc: map[string]any{"rules": []any{map[string]any{"verbs": []any{"get"}}}}}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutService(svc); err != nil {
			return err
		}
		return tx.PutResource(res)
	}))
	read := func() *lifecycle.Resource {
		got, err := r.Resources(ctx, svc.ID)
		require.NoError(t, err)
		require.Len(t, got, 1)
		return got[0]
	}
	first := read()
	first.Status = "Unhealthy"
	first.Finalizers[0] = "changed"
	first.ReadyConditions["Ready"] = "False"
	first.Doc["rules"].([]any)[0].(map[string]any)["verbs"].([]any)[0] = "delete"
	second := read()
	require.NotSame(t, first, second)
	require.Equal(t, "Healthy", second.Status)
	require.Equal(t, []string{"f"}, second.Finalizers)
	require.Equal(t, "True", second.ReadyConditions["Ready"])
	require.Equal(t, "get", second.Doc["rules"].([]any)[0].(map[string]any)["verbs"].([]any)[0])

	second.Status = "Busy"
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
		inTx, err := tx.Resources(svc.ID)
		require.NoError(t, err)
		require.Equal(t, "Healthy", inTx[0].Status, "a transaction reads the store too")
		return tx.PutResource(second)
	}))
	require.Equal(t, "Busy", read().Status, "a write shows in the next read")
}

// The kept records stay under their bound: the service read least
// recently goes first.
func TestResourceMemoBound(t *testing.T) {
	var m resourceMemo
	fill := func(service string, n int) {
		keys := make([]string, n)
		recs := make([]memoRecord, n)
		for i := range keys {
			keys[i] = fmt.Sprintf("%s|%d", service, i)
			recs[i] = memoRecord{raw: []byte{1}, res: &lifecycle.Resource{}}
		}
		m.keep(service, keys, recs)
	}
	fill("a", resourceMemoRecords/2)
	fill("b", resourceMemoRecords/4)
	fill("a", 1) // a read again: b is now the oldest
	fill("c", resourceMemoRecords/2)
	require.LessOrEqual(t, m.records, resourceMemoRecords)
	require.Contains(t, m.services, "a")
	require.Contains(t, m.services, "c")
	require.NotContains(t, m.services, "b")
	m.forget("a")
	require.Equal(t, resourceMemoRecords/2, m.records)
}
