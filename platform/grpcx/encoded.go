package grpcx

import (
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// Encoded is a unary reply already in protobuf wire format: a handler (or
// its interceptor) that keeps the encoding of an answer it serves over and
// over returns it instead of the message, and the server sends the bytes
// as they are instead of encoding the message again. The bytes must be
// the encoding of the method's response message; they are never modified.
type Encoded []byte

// encodedCodec is grpc's protobuf codec that sends Encoded replies as they
// are; everything else goes through the protobuf codec unchanged.
type encodedCodec struct{ proto encoding.CodecV2 }

func newEncodedCodec() encodedCodec {
	return encodedCodec{proto: encoding.GetCodecV2(protocodec.Name)}
}

func (c encodedCodec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(Encoded); ok {
		// A SliceBuffer is not pooled: freeing it leaves the bytes alone.
		return mem.BufferSlice{mem.SliceBuffer(e)}, nil
	}
	return c.proto.Marshal(v)
}

func (c encodedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return c.proto.Unmarshal(data, v)
}

func (encodedCodec) Name() string { return protocodec.Name }
