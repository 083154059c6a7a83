package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// MaxWatchIDs bounds one fan-in: a list page holds at most 128 services.
const MaxWatchIDs = 128

// watchFanIn merges the watch streams of up to MaxWatchIDs services into
// one newline-delimited JSON stream, in the REST watch's shape
// ({"result": event} per line, {"error": …} when one stream fails). A
// browser keeps only six HTTP/1.1 connections per host, so a list page
// cannot hold a REST watch per row; here the rows' streams share one
// connection to the browser and are multiplexed over gRPC to lifecycle,
// each called with the caller's own token (lifecycle checks it per
// stream, as for /v2/…/watch).
type watchFanIn struct {
	lifecycle lifecyclev1.LifecycleServiceClient
	log       *slog.Logger
}

var eventJSON = protojson.MarshalOptions{EmitDefaultValues: true}

func (h watchFanIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header(), r.TLS != nil)
	ids, err := watchIDs(r)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, codes.InvalidArgument, err.Error())
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", r.Header.Get("Authorization"))
	lines := make(chan []byte)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.follow(ctx, id, lines)
		}()
	}
	// The streams end with the request (cancel) or by themselves (a
	// deleted service's stream ends after its last event).
	go func() {
		wg.Wait()
		close(lines)
	}()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for line := range lines {
		if _, err := w.Write(line); err != nil {
			cancel()
			continue // drain: the senders exit on ctx
		}
		_ = rc.Flush()
	}
}

// follow sends one service's events as lines until its stream ends.
func (h watchFanIn) follow(ctx context.Context, id string, lines chan<- []byte) {
	send := func(line []byte) bool {
		select {
		case lines <- line:
			return true
		case <-ctx.Done():
			return false
		}
	}
	stream, err := h.lifecycle.WatchService(ctx, &lifecyclev1.WatchServiceRequest{Id: id})
	for err == nil {
		var ev *lifecyclev1.WatchServiceResponse
		if ev, err = stream.Recv(); err != nil {
			break
		}
		raw, merr := eventJSON.Marshal(ev)
		if merr != nil {
			h.log.WarnContext(ctx, "console watch: encode event", "id", id, "error", merr)
			continue
		}
		if !send(append(append([]byte(`{"result":`), raw...), "}\n"...)) {
			return
		}
	}
	if errors.Is(err, io.EOF) || ctx.Err() != nil {
		return
	}
	st := status.Convert(err)
	msg, _ := json.Marshal(map[string]any{"error": map[string]any{"code": int(st.Code()), "message": st.Message(), "id": id}})
	send(append(msg, '\n'))
}

// watchIDs reads the id parameters: 1 to MaxWatchIDs distinct service ids.
func watchIDs(r *http.Request) ([]string, error) {
	raw := r.URL.Query()["id"]
	if len(raw) == 0 {
		return nil, fmt.Errorf("query parameter id: give at least one service id (id=…&id=…)")
	}
	if len(raw) > MaxWatchIDs {
		return nil, fmt.Errorf("query parameter id: %d ids, at most %d in one watch", len(raw), MaxWatchIDs)
	}
	seen := map[string]bool{}
	var ids []string
	for _, id := range raw {
		id = strings.TrimSpace(id)
		if id == "" || len(id) > 256 {
			return nil, fmt.Errorf("query parameter id: %q is not a service id", id)
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}
