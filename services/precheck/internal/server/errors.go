package server

import "github.com/vcfsm/vcfsm/platform/grpcerr"

// ErrorTable maps the precheck domain errors to gRPC codes.
var ErrorTable = grpcerr.Table{}
