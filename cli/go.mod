module github.com/vcfsm/vcfsm/cli

go 1.26.0

replace (
	github.com/vcfsm/vcfsm/gen => ../gen
	github.com/vcfsm/vcfsm/platform => ../platform
	github.com/vcfsm/vcfsm/services/compatibility => ../services/compatibility
	github.com/vcfsm/vcfsm/services/gateway => ../services/gateway
	github.com/vcfsm/vcfsm/services/lifecycle => ../services/lifecycle
	github.com/vcfsm/vcfsm/services/precheck => ../services/precheck
	github.com/vcfsm/vcfsm/services/renderer => ../services/renderer
	github.com/vcfsm/vcfsm/services/vcfsm => ../services/vcfsm
)

require (
	github.com/pmezard/go-difflib v1.0.0
	github.com/spf13/cobra v1.10.2
	github.com/vbauerster/mpb/v8 v8.16.2
	github.com/vcfsm/vcfsm/gen v0.0.0-00010101000000-000000000000
	golang.org/x/term v0.47.0
	google.golang.org/protobuf v1.36.12
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/VividCortex/ewma v1.2.0 // indirect
	github.com/acarl005/stripansi v0.0.0-20180116102854-5a71ef0e047d // indirect
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.33.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-runewidth v0.0.30 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/vbauerster/cupwriter v0.0.5 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20261026165753-2ffab32bce7e // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261019180522-ce908d29299b // indirect
	google.golang.org/grpc v1.85.0 // indirect
)
