package simulator

import (
	"context"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Load writes objects as they stand, in one transaction: scale fixtures
// put hundreds of thousands of already-applied resources in place without
// one commit each.
func (s *Simulator) Load(ctx context.Context, objs []target.Object) error {
	return s.st.Update(ctx, func(tx store.Tx) error {
		for _, obj := range objs {
			if obj.ExternalID == "" {
				obj.ExternalID = externalID(obj.Key)
			}
			if err := putObject(tx, obj, store.AnyRevision); err != nil {
				return err
			}
		}
		return nil
	})
}
