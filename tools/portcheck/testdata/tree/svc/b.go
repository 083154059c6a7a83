package svc

import "net"

func Listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:9090") }
