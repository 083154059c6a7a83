package lifecycle

import "context"

// Revisions is a repository whose answers carry the store revision they
// reflect, and which can wait until its view has reached one: reads
// through any replica are then never older than a revision a client saw
// (read-your-writes across replicas).
type Revisions interface {
	// Revision is the store revision this replica's answers reflect at
	// least (its view and its own writes); 0 when the store has none.
	Revision() int64
	// WaitRevision returns once the view has reached rev, or an error
	// wrapping ErrUnavailable when ctx ends first.
	WaitRevision(ctx context.Context, rev int64) error
}
