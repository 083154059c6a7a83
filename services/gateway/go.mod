module github.com/vcfsm/vcfsm/services/gateway

go 1.26.0

replace (
	github.com/vcfsm/vcfsm/gen => ../../gen
	github.com/vcfsm/vcfsm/platform => ../../platform
)

require (
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.33.0
	github.com/stretchr/testify v1.12.1
	github.com/vcfsm/vcfsm/gen v0.0.0-00010101000000-000000000000
	github.com/vcfsm/vcfsm/platform v0.0.0-00010101000000-000000000000
	golang.org/x/time v0.15.0
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/peterbourgon/ff/v3 v3.4.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261026165753-2ffab32bce7e // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b // indirect
)
