package app

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"os"
	"time"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
)

// DefaultOwnerTTL is the default lease of a replica's ownership of
// operations and of the controllers (--owner-ttl).
const DefaultOwnerTTL = 10 * time.Second

// distribute makes replicas sharing an etcd store take turns: each
// service's operations run on one replica at a time and one elected
// replica runs the controllers, every write fenced by the ownership it
// depends on. On bbolt (one process) there is nothing to share and cfg is
// left as it is.
// The repository on etcd follows the store: the write path announces
// every replica's commits from its feed.
var _ commit.Feed = (*storage.Repo)(nil)

func (s *Service) distribute(cfg Config, mcfg *manager.Config) error {
	est, ok := store.Unwrap(s.store).(*etcdstore.Store)
	if !ok {
		return nil
	}
	ttl := cfg.OwnerTTL
	if ttl <= 0 {
		ttl = DefaultOwnerTTL
	}
	s.replica = replicaID()
	owners, err := est.NewOwners(s.replica, ttl)
	if err != nil {
		return fmt.Errorf("--owner-ttl %s: %w", ttl, err)
	}
	s.owners = owners
	mcfg.Claims = storage.Claims{Owners: owners}
	mcfg.Leadership = storage.Leader{Owners: owners}
	// A dead owner's operations are taken over within TTL + TTL/4.
	mcfg.ClaimSweep = max(ttl/4, 250*time.Millisecond)
	return nil
}

// replicaID names this process in ownership records: host and a random
// suffix, so a restarted replica never mistakes its predecessor's claims
// for its own.
func replicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "lifecycle"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// Replica is this replica's id in ownership records ("" on bbolt).
func (s *Service) Replica() string { return s.replica }
