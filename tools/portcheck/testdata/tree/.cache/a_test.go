package svc

import (
	"net"
	"testing"
)

func TestA(t *testing.T) {
	_, _ = net.Listen("tcp", "127.0.0.1:0")
	_, _ = net.Listen("tcp", "127.0.0.1:9100")
}
