package boltstore

// QueuedBatchCalls is how many Batch calls wait for the next batch.
func (s *Store) QueuedBatchCalls() int {
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	return len(s.pending)
}
