module github.com/vcfsm/vcfsm/services/compatibility

go 1.26.0

replace (
	github.com/vcfsm/vcfsm/gen => ../../gen
	github.com/vcfsm/vcfsm/platform => ../../platform
)

require (
	github.com/blang/semver/v4 v4.0.0
	github.com/getkin/kin-openapi v0.153.0
	github.com/hashicorp/go-version v1.9.0
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/stretchr/testify v1.12.1
	github.com/vcfsm/vcfsm/gen v0.0.0-00010101000000-000000000000
	github.com/vcfsm/vcfsm/platform v0.0.0-00010101000000-000000000000
	go.yaml.in/yaml/v3 v3.0.5
	google.golang.org/grpc v1.85.0
)

require (
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.yaml.in/yaml/v4 v4.0.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
