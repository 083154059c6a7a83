package sandbox

import (
	"bufio"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// This file starts worker processes (isolated where the platform allows),
// checks their hello, reads their frames and stops them.

// start launches one worker and waits for its hello.
func (p *Pool) start() (*worker, error) {
	if !p.isolate.Load() {
		return p.launch(false)
	}
	w, isolatedErr := p.launch(true)
	if isolatedErr == nil {
		return w, nil
	}
	// Network namespaces need privileges some systems withhold: if the
	// worker starts without one, go on without.
	w, err := p.launch(false)
	if err != nil {
		return nil, err
	}
	p.isolate.Store(false)
	p.log.Warn("render workers cannot get a network namespace of their own; they share the renderer's", "error", isolatedErr)
	return w, nil
}

// handshake waits (bounded) for a new worker's hello and prepares its
// digest cache.
func (p *Pool) handshake(respR *os.File) (*bufio.Reader, *lru.Cache[string, struct{}], error) {
	reader := bufio.NewReader(respR)
	if err := respR.SetReadDeadline(time.Now().Add(startTimeout)); err != nil {
		return nil, nil, fmt.Errorf("render worker: %w", err)
	}
	kind, hello, err := readFrame(reader)
	if err == nil && (kind != kindHello || string(hello) != protocolVersion) {
		err = fmt.Errorf("got frame kind %d %q, want kind %d %q", kind, hello, kindHello, protocolVersion)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("render worker did not start (hello: %w): the executable %s must call the renderer's MaybeRunWorker hook (renderer app.MaybeRunWorker()) first thing in main, and a test binary in TestMain", err, p.exe)
	}
	if err := respR.SetReadDeadline(time.Time{}); err != nil {
		return nil, nil, fmt.Errorf("render worker: %w", err)
	}
	known, err := lru.New[string, struct{}](p.cfg.CacheSize)
	if err != nil {
		return nil, nil, err
	}
	return reader, known, nil
}

func (p *Pool) launch(isolate bool) (*worker, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("render worker: pipe: %w", err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		_ = reqR.Close()
		_ = reqW.Close()
		return nil, fmt.Errorf("render worker: pipe: %w", err)
	}
	out := &lineLogger{log: p.log}
	// The argument is for binaries that lack the hook: a Go test binary or
	// a main with a FlagSet rejects it and exits at once, instead of
	// running its tests or starting a second service.
	cmd := exec.Command(p.exe, workerArg)
	cmd.Env = []string{
		workerEnv + "=1",
		workerCacheEnv + "=" + strconv.Itoa(p.cfg.CacheSize),
		// The Go runtime collects hard before the parent's kill line...
		"GOMEMLIMIT=" + strconv.FormatInt(p.cfg.MemoryLimit/10*9, 10),
		// ...so below it a worker can trade some memory for less GC: a
		// warm render is about 15% faster than with the default 100.
		"GOGC=200",
	}
	cmd.Dir = "/"
	cmd.Stdin = reqR
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.ExtraFiles = []*os.File{respW}
	cmd.SysProcAttr = sysProcAttr(isolate)
	startErr := cmd.Start()
	// The child holds its own copies of its pipe ends now.
	_ = reqR.Close()
	_ = respW.Close()
	if startErr != nil {
		_ = reqW.Close()
		_ = respR.Close()
		return nil, fmt.Errorf("render worker: start %s: %w", p.exe, startErr)
	}
	out.setPID(cmd.Process.Pid)
	reader, known, err := p.handshake(respR)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = reqW.Close()
		_ = respR.Close()
		return nil, err
	}
	w := &worker{
		cmd:      cmd,
		pid:      cmd.Process.Pid,
		requests: reqW,
		frames:   make(chan frame, 1),
		done:     make(chan struct{}),
		killed:   make(chan struct{}),
		known:    known,
	}
	p.mu.Lock()
	p.live[w] = true
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		w.readLoop(reader)
		_ = respR.Close()
		p.mu.Lock()
		delete(p.live, w)
		p.mu.Unlock()
	}()
	return w, nil
}

type frame struct {
	kind    byte
	payload []byte
}

// worker is one worker process. Its read loop owns the response pipe and
// reaps the process.
type worker struct {
	cmd      *exec.Cmd
	pid      int
	requests *os.File
	frames   chan frame
	// done is closed once the process has exited and been reaped;
	// exitErr is set before.
	done    chan struct{}
	exitErr error
	// killed is closed by kill, so that the read loop never blocks on a
	// frame nobody will take.
	killed   chan struct{}
	killOnce sync.Once
	stopOnce sync.Once
	// known are the digests this worker has parsed (it may have evicted
	// some since: it then says so and gets the files again).
	known *lru.Cache[string, struct{}]
}

func (w *worker) readLoop(r *bufio.Reader) {
	defer close(w.done)
	for {
		kind, payload, err := readFrame(r)
		if err != nil {
			break
		}
		select {
		case w.frames <- frame{kind: kind, payload: payload}:
		case <-w.killed:
		}
	}
	w.kill()
	w.exitErr = w.cmd.Wait()
	w.stop()
}

// kill stops the process at once.
func (w *worker) kill() {
	w.killOnce.Do(func() {
		close(w.killed)
		_ = w.cmd.Process.Kill()
	})
}

// stop closes the request pipe: an idle worker exits on its own.
func (w *worker) stop() {
	w.stopOnce.Do(func() { _ = w.requests.Close() })
}

// lineLogger logs what a worker writes to stdout or stderr (a Starlark
// print, a crash trace), one record per line.
type lineLogger struct {
	log  *slog.Logger
	pid  int
	mu   sync.Mutex
	line []byte
}

const maxLogLine = 4096

func (l *lineLogger) setPID(pid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pid = pid
}

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range b {
		if c == '\n' || len(l.line) >= maxLogLine {
			l.log.Warn("render worker output", "pid", l.pid, "line", string(l.line))
			l.line = l.line[:0]
			if c == '\n' {
				continue
			}
		}
		l.line = append(l.line, c)
	}
	return len(b), nil
}
