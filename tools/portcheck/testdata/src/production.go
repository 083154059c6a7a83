// Package fixture: production code (no testing import) keeps its default
// addresses; only test code is checked.
package fixture

import "net"

const DefaultListen = "127.0.0.1:9090"

func Serve() (net.Listener, error) {
	return net.Listen("tcp", DefaultListen+"")
}

func ServeDefault() (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:9090")
}
