module github.com/vcfsm/vcfsm/services/vcfsm

go 1.26.0

replace (
	github.com/vcfsm/vcfsm/gen => ../../gen
	github.com/vcfsm/vcfsm/platform => ../../platform
	github.com/vcfsm/vcfsm/services/compatibility => ../compatibility
	github.com/vcfsm/vcfsm/services/gateway => ../gateway
	github.com/vcfsm/vcfsm/services/lifecycle => ../lifecycle
	github.com/vcfsm/vcfsm/services/precheck => ../precheck
	github.com/vcfsm/vcfsm/services/renderer => ../renderer
)

require (
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.67.5
	github.com/stretchr/testify v1.12.1
	github.com/vcfsm/vcfsm/platform v0.0.0-00010101000000-000000000000
	github.com/vcfsm/vcfsm/services/compatibility v0.0.0-00010101000000-000000000000
	github.com/vcfsm/vcfsm/services/gateway v0.0.0-00010101000000-000000000000
	github.com/vcfsm/vcfsm/services/lifecycle v0.0.0-00010101000000-000000000000
	github.com/vcfsm/vcfsm/services/precheck v0.0.0-00010101000000-000000000000
	github.com/vcfsm/vcfsm/services/renderer v0.0.0-00010101000000-000000000000
	go.etcd.io/etcd/server/v3 v3.7.3
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.33.0 // indirect
	github.com/vcfsm/vcfsm/gen v0.0.0-00010101000000-000000000000 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261026165753-2ffab32bce7e // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
