package steps

import (
	"context"
	"fmt"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// maxResourceWrites bounds the resource records one transaction writes.
// etcd refuses a transaction with more than --max-txn-ops (128 by default)
// writes or compares, and each record written also costs one compare, so a
// service with more resources than that is written in several
// transactions. Every caller writes records whose effect is idempotent
// (a put of the wanted record, a delete of a gone one) from inside a
// journaled step: a crash between two chunks re-runs the step, which
// recomputes what is left from the records and writes it again.
const maxResourceWrites = 100

// unboundedUpdates is implemented by repositories whose store takes any
// number of writes in one transaction (bbolt): there the records go in
// one transaction, one commit (and fsync) instead of one per hundred.
type unboundedUpdates interface {
	UnboundedUpdates() bool
}

// Chunked calls write for 0..n-1, at most maxResourceWrites per
// transaction (all in one where the store allows), in order; it stops at
// the first failed transaction.
func Chunked(ctx context.Context, p RecordPorts, n int, write func(tx lifecycle.Tx, i int) error) error {
	per := maxResourceWrites
	if u, ok := p.Repo.(unboundedUpdates); ok && u.UnboundedUpdates() {
		per = max(n, 1)
	}
	for start := 0; start < n; start += per {
		end := min(start+per, n)
		err := p.Store.Update(ctx, func(tx lifecycle.Tx) error {
			for i := start; i < end; i++ {
				if err := write(tx, i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("write resource records %d-%d of %d: %w", start+1, end, n, err)
		}
	}
	return nil
}

// PutResources records resources, at most maxResourceWrites per
// transaction (see Chunked).
func PutResources(ctx context.Context, p RecordPorts, res []*lifecycle.Resource) error {
	return Chunked(ctx, p, len(res), func(tx lifecycle.Tx, i int) error { return tx.PutResource(res[i]) })
}
