package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"

	"google.golang.org/protobuf/proto"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
)

// Environment of a worker process. The pool sets these and nothing else
// from its own environment reaches the worker.
const (
	workerEnv      = "VCFSM_RENDERER_WORKER"
	workerCacheEnv = "VCFSM_RENDERER_WORKER_CACHE"
)

// workerArg is the worker's command line argument (see Pool.launch).
const workerArg = "--render-worker"

// responseFD is the worker's file descriptor for responses (the first of
// exec.Cmd.ExtraFiles).
const responseFD = 3

// MaybeRunWorker returns at once unless this process was started by a Pool
// as a render worker; then it serves render requests until its stdin
// closes and exits without returning. Call it first thing in main (and in
// TestMain of tests that start a Pool): the pool re-executes the running
// binary.
func MaybeRunWorker() {
	if os.Getenv(workerEnv) == "" {
		return
	}
	// Without the pool's pipe on fd 3 the hello fails and the worker exits.
	os.Exit(serveWorker(os.Stdin, os.NewFile(responseFD, "render-responses")))
}

// serveWorker answers request frames from in on out, one at a time. It
// returns the process exit code: 0 when in closes, 2 on a broken stream.
func serveWorker(in io.Reader, out io.Writer) int {
	cacheSize, err := strconv.Atoi(os.Getenv(workerCacheEnv))
	if err != nil || cacheSize < 1 {
		cacheSize = 16
	}
	engine, err := render.NewEngine(cacheSize)
	if err != nil {
		fmt.Fprintln(os.Stderr, "render worker:", err)
		return 2
	}
	if err := writeFrame(out, kindHello, []byte(protocolVersion)); err != nil {
		fmt.Fprintln(os.Stderr, "render worker: hello:", err)
		return 2
	}
	r := bufio.NewReader(in)
	for {
		kind, payload, err := readFrame(r)
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "render worker: read request:", err)
			return 2
		}
		respKind, body := handle(engine, kind, payload)
		if err := writeFrame(out, respKind, body); err != nil {
			fmt.Fprintln(os.Stderr, "render worker: write response:", err)
			return 2
		}
	}
}

// handle runs one request. A panic inside ytt becomes an error response:
// the worker keeps serving.
func handle(engine *render.Engine, kind byte, payload []byte) (respKind byte, body []byte) {
	defer func() {
		if r := recover(); r != nil {
			// The trace goes to the renderer's log, not to the caller.
			fmt.Fprintf(os.Stderr, "render worker: panic: %v\n%s", r, debug.Stack())
			respKind, body = kindError, encodeError(fmt.Errorf("%w: ytt panicked: %v", render.ErrRenderFailed, r))
		}
	}()
	resp, err := dispatch(engine, kind, payload)
	if err != nil {
		return kindError, encodeError(err)
	}
	data, err := proto.Marshal(resp)
	if err != nil {
		return kindError, encodeError(fmt.Errorf("%w: marshal response: %w", render.ErrRenderFailed, err))
	}
	return kindOK, data
}

func dispatch(engine *render.Engine, kind byte, payload []byte) (proto.Message, error) {
	ctx := context.Background()
	switch kind {
	case kindEffectiveValues:
		req := &rendererv1.RenderEffectiveValuesRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, badRequest(err)
		}
		return engine.RenderEffectiveValues(ctx, req)
	case kindResources:
		req := &rendererv1.RenderResourcesRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, badRequest(err)
		}
		return engine.RenderResources(ctx, req)
	case kindAccessGrants:
		req := &rendererv1.RenderAccessGrantsRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, badRequest(err)
		}
		return engine.RenderAccessGrants(ctx, req)
	case kindApplyOverlay:
		req := &rendererv1.ApplyOverlayRequest{}
		if err := proto.Unmarshal(payload, req); err != nil {
			return nil, badRequest(err)
		}
		return engine.ApplyOverlay(ctx, req)
	}
	return nil, fmt.Errorf("%w: unknown request kind %d", render.ErrRenderFailed, kind)
}

func badRequest(err error) error {
	return fmt.Errorf("%w: decode request: %w", render.ErrRenderFailed, err)
}
