package app

import (
	"sync"

	"google.golang.org/protobuf/proto"
)

// jsonCache keeps the JSON of recent responses and watch events, keyed by
// the message's type and deterministic binary encoding: the same content
// always has the same JSON (protojson sorts map keys, and its spacing is
// fixed per binary), so a hit serves exactly what marshalling would. A
// binary encoding costs a fraction of protojson's reflection, and the
// same view is read over and over (GETs of one service; one event sent to
// a thousand watch streams). The cache is bounded by bytes and emptied
// when full: no eviction bookkeeping on the hot path.
type jsonCache struct {
	mu    sync.Mutex
	m     map[string][]byte
	bytes int
	// keys recycles the key buffers: a lookup builds its key in one and
	// looks it up without converting it to a string (no copy), so a hit
	// allocates nothing for the key.
	keys sync.Pool
}

const (
	// jsonCacheBytes bounds keys and values together.
	jsonCacheBytes = 8 << 20
	// jsonCacheMaxEntry: larger responses (long lists) are not kept.
	jsonCacheMaxEntry = 64 << 10
)

// cacheable is what the cache keys: a message, or a stream chunk
// {"result": message} as grpc-gateway builds it for a watch event.
func cacheable(v any) (kind string, msg proto.Message) {
	switch t := v.(type) {
	case proto.Message:
		return "m", t
	case map[string]any:
		if len(t) != 1 {
			return "", nil
		}
		if m, ok := t["result"].(proto.Message); ok {
			return "r", m
		}
	}
	return "", nil
}

// marshal returns the cached JSON of v, or marshals it with enc and keeps
// it. Values that are not cacheable go straight to enc.
func (c *jsonCache) marshal(v any, enc func(any) ([]byte, error)) ([]byte, error) {
	kind, msg := cacheable(v)
	if msg == nil {
		return enc(v)
	}
	buf, _ := c.keys.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	defer c.putKey(buf)
	key := append((*buf)[:0], kind...)
	key = append(key, msg.ProtoReflect().Descriptor().FullName()...)
	key = append(key, 0)
	prefix := len(key)
	key, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(key, msg)
	*buf = key
	if err != nil || len(key)-prefix > jsonCacheMaxEntry {
		return enc(v)
	}
	c.mu.Lock()
	out, ok := c.m[string(key)] // no allocation: the compiler looks up the bytes
	c.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err = enc(v)
	if err != nil || len(out) > jsonCacheMaxEntry {
		return out, err
	}
	// Full capacity: a caller appending to the result must copy, not
	// write into the shared array.
	out = out[:len(out):len(out)]
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(key)+len(out) > jsonCacheBytes {
		c.m, c.bytes = map[string][]byte{}, 0
	}
	if _, ok := c.m[string(key)]; !ok {
		c.m[string(key)] = out
		c.bytes += len(key) + len(out)
	}
	return out, nil
}

// putKey returns a key buffer to the pool unless it grew past the largest
// key kept (a long list's encoding): those are left to the collector.
func (c *jsonCache) putKey(buf *[]byte) {
	if cap(*buf) <= 2*jsonCacheMaxEntry {
		c.keys.Put(buf)
	}
}
