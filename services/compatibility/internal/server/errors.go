package server

import "github.com/vcfsm/vcfsm/platform/grpcerr"

// ErrorTable maps the compatibility domain errors to gRPC codes.
var ErrorTable = grpcerr.Table{}
