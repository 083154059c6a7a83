// Package fixture: a test helper package (it imports testing) is test code.
package fixture

import (
	"net"
	"testing"
)

func StartServer(tb testing.TB) net.Listener {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:5000") // want `\(argument of Listen\)`
	if err != nil {
		tb.Fatal(err)
	}
	return lis
}
