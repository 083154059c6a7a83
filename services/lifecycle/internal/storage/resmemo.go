package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// resourceMemoRecords bounds the decoded resource records kept: about
// 5 KiB each (the record and its decoded form), so ≈ 100 MiB at most.
const resourceMemoRecords = 20000

// resourceMemo keeps the decoded form of the resource records last read,
// per service, keyed by the record's bytes as stored. A rollout over a
// thousand Supervisors reads its service's 5,000 resources at every step
// of every wave to pick the few the step moves or verifies; unsealing and
// decoding all of them each time was a third of its CPU. A record whose
// bytes are the same as when it was decoded decodes the same, so the kept
// form is copied instead; any write (here or by another replica) changes
// the bytes, and a sealed record re-sealed changes them too, so nothing
// kept can be stale — at worst it is not used. Callers get copies: they
// may change what they read.
type resourceMemo struct {
	mu       sync.Mutex
	services map[string]*memoService
	records  int
	clock    uint64
}

type memoService struct {
	records map[string]memoRecord // record key → its decoded form
	used    uint64
}

type memoRecord struct {
	raw []byte
	res *lifecycle.Resource
}

// decode returns recs (one service's resource records) decoded, from the
// kept forms where their bytes match.
func (m *resourceMemo) decode(keys *seal.Keyring, serviceID string, recs []store.Record) ([]*lifecycle.Resource, error) {
	out := make([]*lifecycle.Resource, 0, len(recs))
	var fresh []memoRecord
	var freshKeys []string
	m.mu.Lock()
	kept := m.services[serviceID]
	for _, rec := range recs {
		if kept != nil {
			if k, ok := kept.records[rec.Key]; ok && bytes.Equal(k.raw, rec.Value) {
				out = append(out, cloneResource(k.res))
				continue
			}
		}
		out = append(out, nil) // decoded below, outside the lock
	}
	m.mu.Unlock()
	for i, rec := range recs {
		if out[i] != nil {
			continue
		}
		res, err := decodeResource(keys, rec)
		if err != nil {
			return nil, err
		}
		fresh = append(fresh, memoRecord{raw: bytes.Clone(rec.Value), res: cloneResource(res)})
		freshKeys = append(freshKeys, rec.Key)
		out[i] = res
	}
	m.keep(serviceID, freshKeys, fresh)
	return out, nil
}

// keep records decoded forms for one service, evicting the services used
// least recently past the bound.
func (m *resourceMemo) keep(serviceID string, keys []string, recs []memoRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock++
	if m.services == nil {
		m.services = map[string]*memoService{}
	}
	s := m.services[serviceID]
	if s == nil {
		s = &memoService{records: map[string]memoRecord{}}
		m.services[serviceID] = s
	}
	s.used = m.clock
	for i, k := range keys {
		if _, ok := s.records[k]; !ok {
			m.records++
		}
		s.records[k] = recs[i]
	}
	for m.records > resourceMemoRecords && len(m.services) > 1 {
		m.evictOldest(serviceID)
	}
}

func (m *resourceMemo) evictOldest(except string) {
	var oldest string
	for id, s := range m.services {
		if id != except && (oldest == "" || s.used < m.services[oldest].used) {
			oldest = id
		}
	}
	m.drop(oldest)
}

// forget drops a service's records (it is being deleted).
func (m *resourceMemo) forget(serviceID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(serviceID)
}

// reset forgets every record.
func (m *resourceMemo) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.services, m.records = nil, 0
}

func (m *resourceMemo) drop(serviceID string) {
	if s, ok := m.services[serviceID]; ok {
		m.records -= len(s.records)
		delete(m.services, serviceID)
	}
}

func decodeResource(keys *seal.Keyring, rec store.Record) (*lifecycle.Resource, error) {
	value, _, err := openRecord(keys, rec)
	if err != nil {
		return nil, err
	}
	var res lifecycle.Resource
	if err := json.Unmarshal(value, &res); err != nil {
		return nil, fmt.Errorf("decode resource %s: %w", rec.Key, err)
	}
	return &res, nil
}

// cloneResource is a deep copy: callers may change anything they read,
// the document's nested maps and lists included.
func cloneResource(r *lifecycle.Resource) *lifecycle.Resource {
	c := *r
	c.Doc, _ = lifecycle.CopyJSON(r.Doc).(map[string]any)
	c.Finalizers = slices.Clone(r.Finalizers)
	c.ReadyConditions = maps.Clone(r.ReadyConditions)
	return &c
}
