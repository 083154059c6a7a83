// Package sandbox runs renders in worker processes that can be killed.
//
// Bundle templates are vendor code, and ytt cannot be interrupted: it
// creates its Starlark threads internally, with no cancellation or step
// limit, so a template with nested range loops runs for hours in-process.
// The Pool therefore keeps a few pre-started copies of the running binary
// in worker mode (see MaybeRunWorker), sends each render to an idle one,
// and kills a worker that outlives the time bound or outgrows the memory
// bound. The failed call gets a clear error, a fresh worker takes the
// killed one's place, and the service keeps serving.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
)

// Sentinel errors of the sandbox; internal/server maps them to gRPC codes.
var (
	// ErrTimeLimit: a render ran longer than the time bound and was killed.
	ErrTimeLimit = errors.New("render time limit exceeded")
	// ErrMemoryLimit: a render grew past the memory bound and was killed.
	ErrMemoryLimit = errors.New("render memory limit exceeded")
	// ErrWorkerCrashed: a worker died or broke the protocol mid-render.
	ErrWorkerCrashed = errors.New("render worker crashed")
	// ErrClosed: the pool is shutting down.
	ErrClosed = errors.New("renderer is shutting down")
)

// Config configures a Pool.
type Config struct {
	// Workers is the number of worker processes (renders in parallel).
	Workers int
	// Queue is how many renders may wait for a worker (0: four per
	// worker); beyond it, and beyond a principal's half of it, a render
	// is refused with ErrBusy (admission.go).
	Queue int
	// Timeout bounds the wall time of one render.
	Timeout time.Duration
	// MemoryLimit bounds a worker's resident memory, in bytes; the worker's
	// GOMEMLIMIT is 90% of it.
	MemoryLimit int64
	// CacheSize is the number of bundles the pool and each worker keep.
	CacheSize int
	// IsolateNetwork starts workers in a network namespace of their own
	// when the system allows it (Linux).
	IsolateNetwork bool
	Logger         *slog.Logger
	// Executable is the binary started as a worker; empty means this
	// process's own executable (the normal case).
	Executable string
}

// Tunables that are not worth a flag.
const (
	startTimeout  = 15 * time.Second
	memoryPoll    = 10 * time.Millisecond
	stopGrace     = 2 * time.Second
	maxRespawnGap = 5 * time.Second
)

// Pool is a set of render workers. It implements render.Renderer and is
// safe for concurrent use.
type Pool struct {
	cfg  Config
	log  *slog.Logger
	exe  string
	idle chan *worker
	// admit shares the workers fairly among principals.
	admit *admission
	// bundles keeps the files of recently seen bundles, so that a request
	// may name a cached digest without its files.
	bundles *lru.Cache[string, []*commonv1.BundleFile]
	isolate atomic.Bool

	// restarts counts workers replaced after a kill or crash.
	restarts atomic.Int64

	mu        sync.Mutex
	live      map[*worker]bool
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var _ render.Renderer = (*Pool)(nil)

// New starts cfg.Workers workers and returns once all are ready.
func New(cfg Config) (*Pool, error) {
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("render workers: need at least 1, got %d", cfg.Workers)
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("render timeout must be positive, got %s", cfg.Timeout)
	}
	if cfg.MemoryLimit < 32<<20 {
		return nil, fmt.Errorf("render memory limit must be at least 32 MiB, got %s", humanize.IBytes(uint64(max(cfg.MemoryLimit, 0))))
	}
	if cfg.CacheSize < 1 {
		return nil, fmt.Errorf("render cache size must be at least 1, got %d", cfg.CacheSize)
	}
	if cfg.Queue == 0 {
		cfg.Queue = 4 * cfg.Workers
	}
	if cfg.Queue < 0 {
		return nil, fmt.Errorf("render queue must not be negative, got %d", cfg.Queue)
	}
	if os.Getenv(workerEnv) != "" {
		// A worker binary without the hook got as far as starting its own
		// pool: stop here instead of spawning workers recursively.
		return nil, fmt.Errorf("this process was started as a render worker but its main did not call the renderer's MaybeRunWorker hook")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	exe := cfg.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("render workers: find own executable: %w", err)
		}
	}
	bundles, err := lru.New[string, []*commonv1.BundleFile](cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("bundle cache: %w", err)
	}
	p := &Pool{
		cfg:     cfg,
		log:     log,
		exe:     exe,
		idle:    make(chan *worker, cfg.Workers),
		admit:   newAdmission(cfg.Workers, cfg.Queue),
		bundles: bundles,
		live:    map[*worker]bool{},
		closed:  make(chan struct{}),
	}
	p.isolate.Store(cfg.IsolateNetwork)
	for i := 0; i < cfg.Workers; i++ {
		w, err := p.start()
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		p.idle <- w
	}
	return p, nil
}

// RenderEffectiveValues runs the value layers in a worker.
func (p *Pool) RenderEffectiveValues(ctx context.Context, req *rendererv1.RenderEffectiveValuesRequest) (*rendererv1.RenderEffectiveValuesResponse, error) {
	resp := &rendererv1.RenderEffectiveValuesResponse{}
	if err := p.call(ctx, kindEffectiveValues, req, req.GetBundle(), resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// RenderResources renders config/ in a worker.
func (p *Pool) RenderResources(ctx context.Context, req *rendererv1.RenderResourcesRequest) (*rendererv1.RenderResourcesResponse, error) {
	resp := &rendererv1.RenderResourcesResponse{}
	if err := p.call(ctx, kindResources, req, req.GetBundle(), resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// RenderAccessGrants derives access grants in a worker.
func (p *Pool) RenderAccessGrants(ctx context.Context, req *rendererv1.RenderAccessGrantsRequest) (*rendererv1.RenderAccessGrantsResponse, error) {
	resp := &rendererv1.RenderAccessGrantsResponse{}
	if err := p.call(ctx, kindAccessGrants, req, req.GetBundle(), resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// ApplyOverlay runs an Overlay's ytt template in a worker. A template that
// exceeds the bounds fails like any other failing template: the target is
// Unhealthy.
func (p *Pool) ApplyOverlay(ctx context.Context, req *rendererv1.ApplyOverlayRequest) (*rendererv1.ApplyOverlayResponse, error) {
	resp := &rendererv1.ApplyOverlayResponse{}
	err := p.call(ctx, kindApplyOverlay, req, nil, resp)
	if errors.Is(err, ErrTimeLimit) || errors.Is(err, ErrMemoryLimit) {
		return &rendererv1.ApplyOverlayResponse{Status: render.StatusUnhealthy, Message: render.FailedMessage(err.Error())}, nil
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// call sends one request to an idle worker. bundle is the request's bundle
// (nil for requests without one): the worker gets its files only when it
// has not seen the digest yet.
func (p *Pool) call(ctx context.Context, kind byte, req proto.Message, bundle *commonv1.Bundle, resp proto.Message) error {
	var (
		key   string
		files []*commonv1.BundleFile
	)
	if kind != kindApplyOverlay {
		var err error
		if key, files, err = p.resolveBundle(bundle); err != nil {
			return err
		}
	}
	principal := principalOf(ctx)
	if err := p.admit.enter(ctx, principal); err != nil {
		return err
	}
	defer p.admit.leave(principal)
	w, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	// A worker that evicted the bundle from its cache answers "not
	// cached": the second attempt sends the files.
	for attempt := 0; attempt < 2; attempt++ {
		msg := req
		if key != "" {
			send := &commonv1.Bundle{Digest: key}
			if attempt > 0 || !w.known.Contains(key) {
				send.Files = files
			}
			msg = withBundle(req, send)
		}
		payload, err := proto.Marshal(msg)
		if err != nil {
			p.release(w)
			return fmt.Errorf("marshal render request: %w", err)
		}
		respKind, body, err := p.exchange(ctx, w, kind, payload)
		if err != nil {
			p.replace(w)
			return err
		}
		switch respKind {
		case kindOK:
			if key != "" {
				w.known.Add(key, struct{}{})
			}
			p.release(w)
			if err := proto.Unmarshal(body, resp); err != nil {
				return fmt.Errorf("%w: unreadable response: %w", ErrWorkerCrashed, err)
			}
			return nil
		case kindError:
			werr := decodeError(body)
			if errors.Is(werr, render.ErrBundleNotCached) && attempt == 0 {
				w.known.Remove(key)
				continue
			}
			p.release(w)
			return werr
		default:
			p.replace(w)
			return fmt.Errorf("%w: unexpected response frame kind %d", ErrWorkerCrashed, respKind)
		}
	}
	p.release(w)
	return fmt.Errorf("%w: the worker did not keep bundle %s", ErrWorkerCrashed, key)
}

// resolveBundle returns the bundle's cache key and files, taking the files
// from the pool's cache when the request names a digest only.
func (p *Pool) resolveBundle(b *commonv1.Bundle) (string, []*commonv1.BundleFile, error) {
	key, err := render.BundleKey(b)
	if err != nil {
		return "", nil, err
	}
	if len(b.GetFiles()) > 0 {
		if cached, ok := p.bundles.Get(key); ok {
			return key, cached, nil
		}
		needed := render.NeededFiles(b.GetFiles())
		if len(needed) == 0 {
			// Nothing to render: let the worker say what is missing.
			needed = b.GetFiles()
		}
		p.bundles.Add(key, needed)
		return key, needed, nil
	}
	files, ok := p.bundles.Get(key)
	if !ok {
		return "", nil, render.NotCachedError(key)
	}
	return key, files, nil
}

// withBundle returns a shallow copy of req with its bundle field replaced.
// Reflection keeps it correct when the request messages gain fields.
func withBundle(req proto.Message, bundle *commonv1.Bundle) proto.Message {
	src := req.ProtoReflect()
	dst := src.New()
	bundleField := src.Descriptor().Fields().ByName("bundle")
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd != bundleField {
			dst.Set(fd, v)
		}
		return true
	})
	dst.Set(bundleField, protoreflect.ValueOfMessage(bundle.ProtoReflect()))
	return dst.Interface()
}

func (p *Pool) acquire(ctx context.Context) (*worker, error) {
	select {
	case <-p.closed:
		return nil, ErrClosed
	default:
	}
	select {
	case w := <-p.idle:
		return w, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a render worker: %w", ctx.Err())
	case <-p.closed:
		return nil, ErrClosed
	}
}

// release returns a healthy worker to the idle set.
func (p *Pool) release(w *worker) {
	select {
	case <-p.closed:
		w.stop()
	default:
		p.idle <- w
	}
}

// exchange sends one request and waits for the response, enforcing the
// bounds. On any error the worker is unusable.
func (p *Pool) exchange(ctx context.Context, w *worker, kind byte, payload []byte) (byte, []byte, error) {
	deadline := time.Now().Add(p.cfg.Timeout)
	if err := w.requests.SetWriteDeadline(deadline); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrWorkerCrashed, err)
	}
	if err := writeFrame(w.requests, kind, payload); err != nil {
		if time.Now().After(deadline) {
			return 0, nil, p.timeLimitError()
		}
		return 0, nil, fmt.Errorf("%w: send request: %w", ErrWorkerCrashed, err)
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var poll <-chan time.Time
	if canWatchMemory {
		ticker := time.NewTicker(memoryPoll)
		defer ticker.Stop()
		poll = ticker.C
	}
	for {
		select {
		case f := <-w.frames:
			return f.kind, f.payload, nil
		case <-w.done:
			select {
			case f := <-w.frames:
				return f.kind, f.payload, nil
			default:
			}
			return 0, nil, p.crashError(w)
		case <-timer.C:
			return 0, nil, p.timeLimitError()
		case <-ctx.Done():
			// ytt cannot be interrupted: abandoning the render means
			// killing its worker.
			return 0, nil, fmt.Errorf("render abandoned: %w", ctx.Err())
		case <-poll:
			rss, err := residentBytes(w.pid)
			if err == nil && rss > p.cfg.MemoryLimit {
				return 0, nil, fmt.Errorf("%w: the render used %s, more than the %s allowed (--render-memory-limit), and was stopped",
					ErrMemoryLimit, humanize.IBytes(uint64(rss)), humanize.IBytes(uint64(p.cfg.MemoryLimit)))
			}
		}
	}
}

func (p *Pool) timeLimitError() error {
	return fmt.Errorf("%w: the render ran longer than %s (--render-timeout) and was stopped; the bundle's templates may not terminate",
		ErrTimeLimit, p.cfg.Timeout)
}

func (p *Pool) crashError(w *worker) error {
	select {
	case <-p.closed:
		return ErrClosed
	default:
	}
	exitErr := w.exitErr
	if exitErr == nil {
		// Wait reports a clean exit as nil.
		exitErr = errors.New("exit status 0")
	}
	return fmt.Errorf("%w: the render worker exited during the render (%w); a new worker replaces it", ErrWorkerCrashed, exitErr)
}

// replace kills a worker and starts another in its place in the
// background, retrying with backoff while starts fail.
func (p *Pool) replace(old *worker) {
	p.restarts.Add(1)
	old.kill()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		<-old.done
		gap := 100 * time.Millisecond
		for {
			select {
			case <-p.closed:
				return
			default:
			}
			w, err := p.start()
			if err == nil {
				p.release(w)
				return
			}
			p.log.Error("cannot start a render worker; retrying", "error", err, "retry_in", gap)
			select {
			case <-p.closed:
				return
			case <-time.After(gap):
			}
			gap = min(gap*2, maxRespawnGap)
		}
	}()
}

// Close stops every worker and waits for them.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		close(p.closed)
		p.mu.Lock()
		workers := make([]*worker, 0, len(p.live))
		for w := range p.live {
			workers = append(workers, w)
		}
		p.mu.Unlock()
		for _, w := range workers {
			w.stop()
		}
		grace := time.NewTimer(stopGrace)
		defer grace.Stop()
		for _, w := range workers {
			select {
			case <-w.done:
			case <-grace.C:
				w.kill()
			}
		}
		p.wg.Wait()
	})
	return nil
}
