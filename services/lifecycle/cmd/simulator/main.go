// Command simulator serves the SIMULATED target platform (Supervisors,
// vCenter, VCF Automation) over gRPC (vcfservices.target.v1.TargetService)
// with its state in a bbolt file, so every lifecycle replica
// (--target-addr) works against one platform.
package main

import (
	"context"
	"flag"
	"log/slog"
	"path/filepath"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/remote"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

type service struct{ sim *simulator.Simulator }

func (s service) Register(srv *grpcx.Server) { remote.Register(srv, s.sim) }
func (s service) Close() error               { return s.sim.Close() }

func main() {
	var dataDir, seedFile string
	cli.Binary{
		Name:          "simulator",
		DefaultListen: "127.0.0.1:9095",
		RegisterFlags: func(fs *flag.FlagSet) {
			fs.StringVar(&dataDir, "data-dir", "./data", "directory of the simulated platform's state (simulated-targets.db) and the development token")
			fs.StringVar(&seedFile, "simulator-seed", "", "seed file of the simulated platform: platform facts, pre-existing resources, faults")
		},
		DataDir: func() string { return dataDir },
		Start: func(_ context.Context, log *slog.Logger, _ cli.Peer, _ *observability.Telemetry) (cli.Service, error) {
			var seed *simulator.Seed
			if seedFile != "" {
				var err error
				if seed, err = simulator.LoadSeed(seedFile); err != nil {
					return nil, err
				}
			}
			sim, err := simulator.Open(simulator.Config{Path: filepath.Join(dataDir, "simulated-targets.db"), Seed: seed})
			if err != nil {
				return nil, err
			}
			log.Info("SIMULATED target platform", "state", filepath.Join(dataDir, "simulated-targets.db"))
			return service{sim: sim}, nil
		},
	}.Main()
}
