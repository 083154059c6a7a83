package app

import (
	"fmt"
	"path/filepath"

	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/remote"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// simulatedTargets returns the simulated targets: the simulator server at
// --target-addr (shared by every replica), or the simulated targets in
// the data directory (one process).
func (s *Service) simulatedTargets(cfg Config) (target.Driver, error) {
	if cfg.TargetAddr != "" {
		if cfg.SimulatorSeed != "" {
			return nil, fmt.Errorf("--simulator-seed seeds the in-process targets; with --target-addr give it to the simulator server")
		}
		conn, err := grpcx.Dial(cfg.TargetAddr, cfg.PeerToken, cfg.PeerDialOptions...)
		if err != nil {
			return nil, fmt.Errorf("--target-addr: %w", err)
		}
		s.conns = append(s.conns, conn)
		return remote.NewClient(conn), nil
	}
	var seed *simulator.Seed
	if cfg.SimulatorSeed != "" {
		var err error
		if seed, err = simulator.LoadSeed(cfg.SimulatorSeed); err != nil {
			return nil, err
		}
	}
	sim, err := simulator.Open(simulator.Config{Path: filepath.Join(cfg.DataDir, "simulated-targets.db"), Seed: seed})
	if err != nil {
		return nil, err
	}
	s.sim = sim
	return sim, nil
}
