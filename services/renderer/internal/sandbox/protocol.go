package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
)

// The parent and a worker talk over two pipes: requests on the worker's
// stdin, responses on its file descriptor 3 (so that anything a library
// prints on stdout cannot corrupt the stream). Every message is a frame:
//
//	uint32 big-endian length of what follows | 1 byte kind | payload
//
// A worker first sends a hello frame carrying protocolVersion, then
// answers each request frame with exactly one response frame.

const protocolVersion = "vcfsm-renderer-worker/1"

// Frame kinds. Requests carry an operation and a protobuf request;
// responses carry a protobuf response or a JSON wireError.
const (
	kindHello byte = iota + 1
	kindEffectiveValues
	kindResources
	kindAccessGrants
	kindApplyOverlay
	kindOK
	kindError
)

// maxFrame bounds what either side will allocate for one frame: well above
// gRPC's 16 MiB request limit, far below a corrupt length's 4 GiB.
const maxFrame = 256 << 20

func writeFrame(w io.Writer, kind byte, payload []byte) error {
	if len(payload)+1 > maxFrame {
		return fmt.Errorf("frame of %d bytes exceeds the %d-byte limit", len(payload)+1, maxFrame)
	}
	buf := make([]byte, 5+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)+1))
	buf[4] = kind
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:4]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[:4])
	if n == 0 || n > maxFrame {
		return 0, nil, fmt.Errorf("frame length %d outside 1..%d", n, maxFrame)
	}
	if _, err := io.ReadFull(r, head[4:5]); err != nil {
		return 0, nil, unexpectedEOF(err)
	}
	payload := make([]byte, n-1)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, unexpectedEOF(err)
	}
	return head[4], payload, nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// wireError carries a domain error from a worker to the parent, which
// rebuilds the same *render.Error (so its sentinel, and so its gRPC code,
// survive the trip).
type wireError struct {
	Kind       string             `json:"kind"`
	Layer      string             `json:"layer"`
	Violations []render.Violation `json:"violations"`
}

var wireKinds = map[string]error{
	"invalid_input":     render.ErrInvalidInput,
	"bundle_not_cached": render.ErrBundleNotCached,
	"render_failed":     render.ErrRenderFailed,
}

func encodeError(err error) []byte {
	we := wireError{Kind: "render_failed", Layer: "render", Violations: []render.Violation{{Rule: err.Error()}}}
	var re *render.Error
	if errors.As(err, &re) {
		for name, sentinel := range wireKinds {
			if errors.Is(re.Kind, sentinel) {
				we = wireError{Kind: name, Layer: re.Layer, Violations: re.Violations}
			}
		}
	}
	data, mErr := json.Marshal(we)
	if mErr != nil {
		// A wireError holds only strings: it always marshals.
		panic(mErr)
	}
	return data
}

func decodeError(data []byte) error {
	var we wireError
	if err := json.Unmarshal(data, &we); err != nil {
		return fmt.Errorf("%w: unreadable error from the render worker: %w", ErrWorkerCrashed, err)
	}
	kind, ok := wireKinds[we.Kind]
	if !ok {
		kind = render.ErrRenderFailed
	}
	return &render.Error{Kind: kind, Layer: we.Layer, Violations: we.Violations}
}
