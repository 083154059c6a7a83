// Package app builds and runs the lifecycle service from its configuration.
// cmd/lifecycle and the all-in-one both use it.
package app

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"k8s.io/client-go/rest"

	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/depot"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/peers"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/server"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/telemetry"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// Config is the lifecycle service's configuration.
type Config struct {
	// DataDir holds the bbolt files, the development token and bundles.
	DataDir string
	// AllowInsecureSources permits http:// bundle sources.
	AllowInsecureSources bool
	// SourceRedirectHosts are hosts ("host" or "host:port") a download
	// may be redirected to besides the source's own: mirrors, a
	// registry's blob storage.
	SourceRedirectHosts []string
	// Addresses of the peer services.
	CompatibilityAddr string
	RendererAddr      string
	PrecheckAddr      string
	// PeerToken is sent to the peer services; set by the caller.
	PeerToken string
	// PeerDialOptions secure the connections to the peers (mTLS); set by
	// the caller.
	PeerDialOptions []grpc.DialOption
	// InventoryFile, when set, replaces the platform inventory at start.
	InventoryFile string
	// SimulatorSeed seeds the simulated targets (YAML).
	SimulatorSeed string
	// ReconcileInterval is the controllers' period.
	ReconcileInterval time.Duration
	// RolloutPoll is how often a running rollout looks at its targets.
	RolloutPoll time.Duration
	// StepTimeout bounds each operation step.
	StepTimeout time.Duration
	// StepTimeouts override StepTimeout per step name (tests).
	StepTimeouts map[string]time.Duration
	// SourceRootCAs, when set, replaces the system roots for https
	// sources and registries (tests; operators use SSL_CERT_FILE).
	SourceRootCAs *x509.CertPool
	// BundleLimits bound downloads and extraction (zero: defaults).
	BundleLimits BundleLimits
	// DownloadStall gives up bundle downloads that make no progress; a
	// zero field disables its check.
	DownloadStall depot.Stall
	// Store is "bolt" (embedded, the default) or "etcd".
	Store string
	// EtcdEndpoints and EtcdPrefix locate the etcd store.
	EtcdEndpoints string
	EtcdPrefix    string
	// Etcd holds etcd's TLS and credentials.
	Etcd EtcdAccess
	// TargetAddr, when set, is the simulator server every replica shares;
	// otherwise the simulated targets live in DataDir, in process.
	TargetAddr string
	// OwnerTTL is the lease of a replica's ownership on --store=etcd: a
	// replica that dies or is cut off loses its operations and the
	// controllers to another one after it (0: DefaultOwnerTTL).
	OwnerTTL time.Duration
	// SignatureKeys are comma-separated PEM public key files trusted to
	// sign bundles.
	SignatureKeys string
	// EncryptionKeyFile is the keyring sealing value layers and resources; empty
	// means a development key generated in DataDir.
	EncryptionKeyFile string
	// TargetDriver is "simulator" (the default) or "kubernetes":
	// Supervisor SupervisorServices and Secrets go to each Supervisor's
	// Kubernetes API, everything else stays on the simulator.
	TargetDriver string
	// KubeconfigDir holds <supervisor>.kubeconfig (--target-driver=kubernetes).
	KubeconfigDir string
	// KubeRESTConfig, when set, reaches a Supervisor's API server instead
	// of the kubeconfig files (tests).
	KubeRESTConfig func(supervisor string) (*rest.Config, error)
	// WrapDriver, when set, wraps the target driver (tests inject faults
	// such as panics through it).
	WrapDriver func(target.Driver) target.Driver
	// Telemetry receives metrics and traces; nil: none served.
	Telemetry *observability.Telemetry
	// MinRevisionWait bounds how long a call sending X-Vcfsm-Min-Revision
	// waits for this replica to catch up (0: server.DefaultMinRevisionWait).
	MinRevisionWait time.Duration
}

func (c Config) wrapDriver(d target.Driver) target.Driver {
	if c.WrapDriver == nil {
		return d
	}
	return c.WrapDriver(d)
}

// stallBounds turns the flags' "0 disables" into the fetcher's negative
// fields; a Config built in code without them gets the defaults.
func stallBounds(s depot.Stall) depot.Stall {
	if s == (depot.Stall{}) {
		return s
	}
	off := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	s.Timeout, s.Window = off(s.Timeout), off(s.Window)
	if s.MinRate == 0 {
		s.MinRate = -1
	}
	return s
}

// RegisterFlags binds the configuration to flags; cli.Parse also reads
// each from VCFSM_<FLAG_NAME> and the config file.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", "./data", "directory for the embedded store, bundles and the development token")
	fs.BoolVar(&c.AllowInsecureSources, "allow-insecure-sources", false, "accept http:// bundle sources and plain-HTTP registries")
	fs.Func("source-redirect-hosts", "comma-separated hosts (host or host:port) a bundle download may be redirected to besides the source's own host, e.g. a mirror or a registry's blob storage; other redirects are refused", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.SourceRedirectHosts = append(c.SourceRedirectHosts, h)
			}
		}
		return nil
	})
	fs.StringVar(&c.CompatibilityAddr, "compatibility", "127.0.0.1:9092", "compatibility service gRPC address: host:port or dns:///name:port (every address the name resolves to) or a comma-separated host:port list; calls go round-robin to the instances reporting SERVING")
	fs.StringVar(&c.RendererAddr, "renderer", "127.0.0.1:9093", "renderer service gRPC address(es), as for --compatibility")
	fs.StringVar(&c.PrecheckAddr, "precheck", "127.0.0.1:9094", "precheck service gRPC address(es), as for --compatibility")
	fs.StringVar(&c.InventoryFile, "inventory-file", "", "platform inventory (YAML or JSON, api.md's Inventory) loaded at start, replacing the stored one")
	fs.StringVar(&c.TargetAddr, "target-addr", "", "gRPC address of the simulator server (the simulator binary) shared by every replica; empty: simulated targets in --data-dir, in process")
	fs.StringVar(&c.SimulatorSeed, "simulator-seed", "", "seed file of the SIMULATED targets: platform facts, pre-existing resources, faults")
	fs.StringVar(&c.TargetDriver, "target-driver", "simulator", "target driver: simulator (every target SIMULATED) or kubernetes (Supervisor SupervisorServices and Secrets on each Supervisor's Kubernetes API; VCF Automation and vCenter stay simulated)")
	fs.StringVar(&c.KubeconfigDir, "kubeconfig-dir", "", "directory holding <supervisor>.kubeconfig for each Supervisor, with --target-driver=kubernetes; an inventory Supervisor's kubeconfig field wins")
	fs.DurationVar(&c.ReconcileInterval, "reconcile-interval", 2*time.Second, "how often controllers re-check every active service")
	fs.DurationVar(&c.RolloutPoll, "rollout-poll", time.Second, "how often a running rollout reads the health of the targets it moved (and looks for approvals and open windows)")
	fs.DurationVar(&c.StepTimeout, "step-timeout", 10*time.Minute, "time bound of one operation step; a step exceeding it marks its operation stuck")
	fs.Int64Var(&c.BundleLimits.MaxDownloadBytes, "bundle-max-download-bytes", 0, "largest bundle tarball downloaded (0: 2 GiB)")
	fs.Int64Var(&c.BundleLimits.MaxBundleBytes, "bundle-max-bytes", 0, "largest extracted bundle tree (0: 64 MiB)")
	fs.IntVar(&c.BundleLimits.MaxFiles, "bundle-max-files", 0, "most files in a bundle tree (0: 4096)")
	fs.Int64Var(&c.BundleLimits.MaxFileBytes, "bundle-max-file-bytes", 0, "largest single file in a bundle tree (0: 16 MiB)")
	fs.DurationVar(&c.DownloadStall.Timeout, "download-stall-timeout", depot.DefaultStallTimeout, "give a bundle download (tarball or registry pull) up when no byte arrives for this long (0: never)")
	fs.Int64Var(&c.DownloadStall.MinRate, "download-min-rate", depot.DefaultMinRate, "bytes per second a bundle download must average over --download-rate-window (0: no floor)")
	fs.DurationVar(&c.DownloadStall.Window, "download-rate-window", depot.DefaultRateWindow, "window over which --download-min-rate is measured")
	fs.StringVar(&c.Store, "store", "bolt", "entity store: bolt (embedded file in --data-dir) or etcd")
	fs.StringVar(&c.EtcdEndpoints, "etcd-endpoints", "http://127.0.0.1:2379", "comma-separated etcd client URLs for --store=etcd")
	fs.StringVar(&c.EtcdPrefix, "etcd-prefix", "/vcfsm/lifecycle/", "key prefix in etcd")
	c.Etcd.RegisterFlags(fs)
	fs.DurationVar(&c.OwnerTTL, "owner-ttl", DefaultOwnerTTL, "with --store=etcd: lease of a replica's ownership of an operation and of the controllers; a dead or cut-off replica's work is taken over after it")
	fs.StringVar(&c.SignatureKeys, "signature-keys", "", "comma-separated PEM public keys trusted to sign bundles (cosign); with keys, isValid means verified and activating with accepted.signatures needs a verified signature")
	fs.StringVar(&c.EncryptionKeyFile, "encryption-key-file", "", "keyring sealing at rest every value that can hold a secret, value layers and rendered resources (AES-256-GCM): lines ID:BASE64(32 bytes), the first seals, all open; mode 0600; replicas on one etcd share it. Default: a key generated into <data-dir>/encryption-key")
}

// openStore opens the configured entity store, timed and counted.
func openStore(ctx context.Context, cfg Config, tel *observability.Telemetry, log *slog.Logger) (store.Store, error) {
	switch cfg.Store {
	case "", "bolt":
		st, err := boltstore.Open(filepath.Join(cfg.DataDir, "lifecycle.db"), storage.Schema)
		if err != nil {
			return nil, fmt.Errorf("lifecycle store: %w", err)
		}
		return tel.InstrumentStore(st, "bolt"), nil
	case "etcd":
		var eps []string
		for _, e := range strings.Split(cfg.EtcdEndpoints, ",") {
			if e = strings.TrimSpace(e); e != "" {
				eps = append(eps, e)
			}
		}
		if len(eps) == 0 {
			return nil, fmt.Errorf("--store=etcd needs --etcd-endpoints")
		}
		ecfg := etcdstore.Config{Endpoints: eps, Prefix: cfg.EtcdPrefix,
			Logger: log.With("component", "etcd-client"), OnConflict: func() { tel.StoreRetried("etcd") }}
		if err := cfg.Etcd.apply(&ecfg); err != nil {
			return nil, err
		}
		st, err := etcdstore.Open(ctx, ecfg, storage.Schema)
		if err != nil {
			return nil, fmt.Errorf("lifecycle store on etcd %s: %w", cfg.EtcdEndpoints, err)
		}
		return tel.InstrumentStore(st, "etcd"), nil
	}
	return nil, fmt.Errorf("--store %q: want bolt or etcd", cfg.Store)
}

// BundleLimits bound what a bundle may be; zero fields take the defaults
// (2 GiB download, 64 MiB extracted, 4096 files, 16 MiB per file).
type BundleLimits struct {
	MaxDownloadBytes int64
	MaxBundleBytes   int64
	MaxFiles         int
	MaxFileBytes     int64
}

// Service is a running lifecycle service.
type Service struct {
	store   store.Store
	owners  *etcdstore.Owners
	replica string
	sim     *simulator.Simulator
	driver  target.Driver
	kube    *kubernetes.Driver
	conns   []*grpc.ClientConn
	peers   []peer
	manager *manager.Manager
	handler *server.Handler
	log     *slog.Logger
	wait    func()
	// repo and keys: the store's entities and the keyring sealing them at
	// rest (Start re-seals in the background).
	repo          *storage.Repo
	keys          *seal.Keyring
	resealMetrics resealMetrics
	// minRevisionWait: Config.MinRevisionWait.
	minRevisionWait time.Duration
}

// New opens the store and the simulated targets and builds the service.
func New(ctx context.Context, cfg Config, log *slog.Logger) (svc *Service, err error) {
	s := &Service{log: log, minRevisionWait: cfg.MinRevisionWait}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	tel := observability.Or(cfg.Telemetry)
	if s.store, err = openStore(ctx, cfg, tel, log); err != nil {
		return nil, err
	}
	if s.keys, err = loadKeyring(cfg, log); err != nil {
		return nil, err
	}
	repo, err := storage.NewSealedRepo(ctx, s.store, s.keys)
	if err != nil {
		return nil, err
	}
	s.repo, s.resealMetrics = repo, newResealMetrics(tel)
	if err := s.openTargets(cfg); err != nil {
		return nil, err
	}
	fetcher, err := depot.NewFetcher(depot.Config{Dir: filepath.Join(cfg.DataDir, "bundles"), RootCAs: cfg.SourceRootCAs,
		AllowInsecure: cfg.AllowInsecureSources, RedirectHosts: cfg.SourceRedirectHosts, Limits: depot.Limits{
			MaxDownloadBytes: cfg.BundleLimits.MaxDownloadBytes, MaxBundleBytes: cfg.BundleLimits.MaxBundleBytes,
			MaxFiles: cfg.BundleLimits.MaxFiles, MaxFileBytes: cfg.BundleLimits.MaxFileBytes,
		}, Stall: stallBounds(cfg.DownloadStall)})
	if err != nil {
		return nil, err
	}
	peers, err := s.dialPeers(cfg, tel)
	if err != nil {
		return nil, err
	}
	sigs, err := loadSignatureKeys(cfg.SignatureKeys)
	if err != nil {
		return nil, err
	}
	mcfg := manager.Config{
		VerifySignatures:  sigs.check(),
		SignatureSet:      sigs.set,
		ReconcileInterval: cfg.ReconcileInterval,
		RolloutPoll:       cfg.RolloutPoll,
		StepTimeout:       cfg.StepTimeout,
		StepTimeouts:      cfg.StepTimeouts,
		Logger:            log,
		Observer:          telemetry.New(tel),
	}
	if err := s.distribute(cfg, &mcfg); err != nil {
		return nil, err
	}
	s.manager = manager.NewManager(mcfg, repo, fetcher, peers, cfg.wrapDriver(s.driver))
	telemetry.Gauges(tel, s.manager.QueueDepth, func() []*lifecycle.Service { return repo.Services(context.Background()) })
	if s.owners != nil {
		telemetry.FencedWrites(tel, s.FencedWrites)
	}
	if err := s.loadInventoryFile(ctx, cfg.InventoryFile); err != nil {
		return nil, err
	}
	s.handler = server.NewHandler(s.manager)
	s.handler.TrustSignatures(sigs.Verifier)
	return s, nil
}

// openTargets opens the simulated targets and, with
// --target-driver=kubernetes, the Kubernetes driver in front of them.
func (s *Service) openTargets(cfg Config) error {
	sim, err := s.simulatedTargets(cfg)
	if err != nil {
		return err
	}
	s.driver, s.kube, err = targetDriver(cfg, sim, s.inventoryKubeconfig)
	return err
}

// targetDriver builds the configured driver: the simulator alone, or the
// Kubernetes driver for what it reaches with the simulator behind it.
func targetDriver(cfg Config, sim target.Driver, kubeconfigFor func(string) string) (target.Driver, *kubernetes.Driver, error) {
	switch cfg.TargetDriver {
	case "", "simulator":
		return sim, nil, nil
	case "kubernetes":
		if cfg.KubeconfigDir != "" {
			if st, err := os.Stat(cfg.KubeconfigDir); err != nil || !st.IsDir() {
				return nil, nil, fmt.Errorf("--kubeconfig-dir %s: not a directory", cfg.KubeconfigDir)
			}
		}
		kube := kubernetes.New(kubernetes.Config{KubeconfigDir: cfg.KubeconfigDir, RESTConfig: cfg.KubeRESTConfig, KubeconfigFor: kubeconfigFor})
		return &target.Router{Primary: kube, Handles: kubernetes.Handles, Fallback: sim}, kube, nil
	}
	return nil, nil, fmt.Errorf("--target-driver %q: want simulator or kubernetes", cfg.TargetDriver)
}

// inventoryKubeconfig is the kubeconfig the stored inventory names for a
// Supervisor.
func (s *Service) inventoryKubeconfig(supervisor string) string {
	if s.manager == nil {
		return ""
	}
	inv, err := s.manager.Inventory(context.Background())
	if err != nil {
		return ""
	}
	for _, r := range inv.Regions {
		for _, sup := range r.Supervisors {
			if sup.Name == supervisor {
				return sup.Kubeconfig
			}
		}
	}
	return ""
}

// dialPeers connects to compatibility, renderer and precheck (each
// connection is closed by Close).
func (s *Service) dialPeers(cfg Config, tel *observability.Telemetry) (lifecycle.Peers, error) {
	dial := func(addr, service string) (*grpc.ClientConn, error) {
		// Every instance behind addr gets calls, round-robin, while its
		// health reports the service SERVING (grpcx.DialService).
		// Peers learn which REST caller a call serves (the renderer
		// shares its workers among them).
		opts := append(append([]grpc.DialOption{grpc.WithChainUnaryInterceptor(auth.OnBehalfOfUnaryClientInterceptor)}, cfg.PeerDialOptions...), tel.DialOptions()...)
		conn, err := grpcx.DialService(addr, service, cfg.PeerToken, opts...)
		if err == nil {
			s.conns = append(s.conns, conn)
			s.peers = append(s.peers, peer{addr: addr, service: service, health: healthpb.NewHealthClient(conn)})
		}
		return conn, err
	}
	compat, err := dial(cfg.CompatibilityAddr, compatibilityv1.CompatibilityService_ServiceDesc.ServiceName)
	if err != nil {
		return lifecycle.Peers{}, err
	}
	rend, err := dial(cfg.RendererAddr, rendererv1.RendererService_ServiceDesc.ServiceName)
	if err != nil {
		return lifecycle.Peers{}, err
	}
	pre, err := dial(cfg.PrecheckAddr, precheckv1.PrecheckService_ServiceDesc.ServiceName)
	if err != nil {
		return lifecycle.Peers{}, err
	}
	return peers.New(compat, rend, pre), nil
}

// Register adds the lifecycle gRPC service and its error table to srv.
func (s *Service) Register(srv *grpcx.Server) {
	lifecyclev1.RegisterLifecycleServiceServer(srv, s.handler)
	srv.RegisterErrors(lifecyclev1.LifecycleService_ServiceDesc.ServiceName, server.ErrorTable)
	srv.InterceptUnary(lifecyclev1.LifecycleService_ServiceDesc.ServiceName, s.handler.Interceptor(s.minRevisionWait))
	srv.SetReadiness(lifecyclev1.LifecycleService_ServiceDesc.ServiceName, s.ready)
	// Fleet rollouts: the same errors, parameter bounds, redaction and
	// revision waits as the lifecycle calls.
	lifecyclev1.RegisterRolloutServiceServer(srv, server.NewRolloutHandler(s.manager))
	srv.RegisterErrors(lifecyclev1.RolloutService_ServiceDesc.ServiceName, server.ErrorTable)
	srv.InterceptUnary(lifecyclev1.RolloutService_ServiceDesc.ServiceName, s.handler.Interceptor(s.minRevisionWait))
	srv.SetReadiness(lifecyclev1.RolloutService_ServiceDesc.ServiceName, s.ready)
}

// Start resumes unfinished operations and runs the workers and controllers
// until ctx ends.
func (s *Service) Start(ctx context.Context) error {
	wait, err := s.manager.Start(ctx)
	if err != nil {
		return err
	}
	resealed := make(chan struct{})
	go func() {
		defer close(resealed)
		reseal(ctx, s.repo, s.keys, s.resealMetrics, s.log)
	}()
	s.wait = func() {
		wait()
		<-resealed
	}
	return nil
}

// FencedWrites is how many of this replica's writes were refused because
// it had lost the ownership they depended on (0 on bbolt).
func (s *Service) FencedWrites() int64 {
	if est, ok := store.Unwrap(s.store).(*etcdstore.Store); ok {
		return est.FencedWrites()
	}
	return 0
}

// Simulator is the in-process simulated target driver (tests inject faults
// through it); nil with --target-addr.
func (s *Service) Simulator() *simulator.Simulator { return s.sim }

// Close waits for the background work (its context must have ended) and
// releases everything.
func (s *Service) Close() error {
	if s.wait != nil {
		s.wait()
	}
	for _, c := range s.conns {
		_ = c.Close()
	}
	if s.kube != nil {
		_ = s.kube.Close()
	}
	if s.owners != nil {
		// Revoking the lease hands this replica's work over at once.
		_ = s.owners.Close()
	}
	if s.sim != nil {
		_ = s.sim.Close()
	}
	if s.store != nil {
		return s.store.Close()
	}
	return nil
}
