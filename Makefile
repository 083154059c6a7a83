# VCF Service Manager. `make run` starts everything; `make test` runs every test.
SHELL := /bin/bash
export GOWORK := $(CURDIR)/go.work
export PATH := $(CURDIR)/.bin:$(PATH)

MODULES := gen platform services/compatibility services/renderer services/precheck services/lifecycle services/gateway services/vcfsm cli
TOOLS := github.com/bufbuild/buf/cmd/buf \
	google.golang.org/protobuf/cmd/protoc-gen-go \
	google.golang.org/grpc/cmd/protoc-gen-go-grpc \
	github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway \
	github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2

.PHONY: chromium console-screenshots images compose-up compose-down e2e-compose kube-test-bins kapp-crds run docs build test generate tools verify verify-generate check-boundaries lint buf-lint buf-format buf-breaking fmt vet bench fuzz tidy clean

## run: start the all-in-one (all services, embedded bbolt store, no setup);
## flags go in ARGS, e.g. make run ARGS="--http-listen 127.0.0.1:18080"
run:
	go run ./services/vcfsm/cmd/vcfsm $(ARGS)

## docs: regenerate docs/configuration.md from every binary's flag set
docs:
	cd services/vcfsm && go test -count=1 -run TestConfigurationDoc -update-docs .

## build: build every binary into bin/ (vcfctl reports VERSION)
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
build:
	@mkdir -p bin
	go build -ldflags "-X github.com/vcfsm/vcfsm/cli/internal/vcfctl.Version=$(VERSION)" -o bin/ ./services/vcfsm/cmd/vcfsm ./services/lifecycle/cmd/lifecycle ./services/compatibility/cmd/compatibility \
		./services/renderer/cmd/renderer ./services/precheck/cmd/precheck ./services/gateway/cmd/gateway \
		./services/precheck/cmd/samplehook ./services/lifecycle/cmd/simulator ./services/vcfsm/cmd/devcerts ./cli/cmd/vcfctl

## test: every unit, contract and end-to-end test of every module
test: kube-test-bins chromium
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && go test -count=1 -timeout 20m ./...); done

## chromium: the browser the console's end-to-end tests drive (Debian's
## chromium package, installed with apt-get when no chromium is on PATH; the
## tests fail, never skip, without it)
chromium:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian's chromium (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; }
	@chromium --version

## console-screenshots: run the console's browser tests and copy the three
## screenshots docs/console.md shows into docs/console/
SHOTS := $(CURDIR)/bin/console-screenshots
console-screenshots: chromium
	@rm -rf $(SHOTS) && mkdir -p $(SHOTS) docs/console
	cd services/vcfsm && VCFSM_SCREENSHOTS=$(SHOTS) go test -count=1 -run 'TestConsoleUpgradeFlow|TestConsoleListPagesThrough10k' .
	cp $(SHOTS)/services.png $(SHOTS)/service.png $(SHOTS)/upgrade-blocked.png docs/console/

## images: the compose stack's images, each a static binary FROM scratch
## (deploy/Dockerfile): vcfsm/<name>:dev for every service, the simulator,
## the sample hook, the demo depot, devcerts and etcd (built from
## go.etcd.io/etcd/server/v3 at the client's version). Nothing is pulled.
IMAGE_PKGS := ./services/lifecycle/cmd/lifecycle ./services/compatibility/cmd/compatibility \
	./services/renderer/cmd/renderer ./services/precheck/cmd/precheck ./services/gateway/cmd/gateway \
	./services/lifecycle/cmd/simulator ./services/precheck/cmd/samplehook ./services/lifecycle/cmd/demodepot \
	./services/vcfsm/cmd/devcerts ./platform/cmd/healthprobe
IMAGES := lifecycle compatibility renderer precheck gateway simulator samplehook demodepot devcerts etcd
IMAGE_DIR := $(CURDIR)/.bin/images
images:
	@mkdir -p $(IMAGE_DIR)/bin
	CGO_ENABLED=0 go build -trimpath -o $(IMAGE_DIR)/bin/ $(IMAGE_PKGS)
	GOWORK=off CGO_ENABLED=0 go build -C tools/etcd -trimpath -o $(IMAGE_DIR)/bin/etcd go.etcd.io/etcd/server/v3
	@set -e; for i in $(IMAGES); do \
		ctx=$(IMAGE_DIR)/ctx/$$i; rm -rf $$ctx; mkdir -p $$ctx/home; \
		ln -f $(IMAGE_DIR)/bin/$$i $$ctx/service; ln -f $(IMAGE_DIR)/bin/healthprobe $$ctx/healthprobe; \
		echo "image vcfsm/$$i:dev"; \
		out=$$(DOCKER_BUILDKIT=0 docker build -q -f deploy/Dockerfile -t vcfsm/$$i:dev $$ctx 2>&1) || { echo "$$out" >&2; exit 1; }; \
	done

## compose-up: build the images and start the replicated stack
## (deploy/docker-compose.yaml); prints the URL and the token
COMPOSE := docker-compose -p vcfsm -f deploy/docker-compose.yaml
compose-up: images
	$(COMPOSE) up -d
	@scripts/compose-wait.sh vcfsm 300
	@echo "REST: http://127.0.0.1:$${VCFSM_HTTP_PORT:-8080}/v2 and http://127.0.0.1:$${VCFSM_HTTP_PORT_2:-8081}/v2 (two gateways)"
	@echo "web console: http://127.0.0.1:$${VCFSM_HTTP_PORT:-8080}/ui/ (sign in with the token)"
	@echo "token: Authorization: Bearer dev-admin-token-change-me"
	@echo "demo bundles: oci://demodepot:5000/demo/bundle:1.0.0, 1.1.0 (with a pre-check hook), 2.0.0"

## compose-down: stop the stack and remove its containers, network and volumes
compose-down:
	$(COMPOSE) down -v --remove-orphans

## e2e-compose: bring up a stack of its own (project vcfsm-e2e, free ports) and
## drive it through a gateway: create → activate → upgrade with a hook →
## rollback → delete, then the faults (kill the owner of a running upgrade,
## kill an etcd member during an activation, cut a replica off the network,
## restart everything); prints each failover time. Removes the stack after.
e2e-compose: images
	cd services/vcfsm && go test -tags compose -count=1 -timeout 30m -v -run TestComposeStack ./composetest/

## kube-test-bins: build the pinned kube-apiserver and etcd the Kubernetes
## target driver tests run (first build ≈ 10 min and 3 GB of memory; cached
## in .bin/ by version). The tests find them through KUBEBUILDER_ASSETS.
KUBE_VERSION := 1.37.2
ETCD_VERSION := 3.7.3
KUBE_ASSETS := $(CURDIR)/.bin/kube-$(KUBE_VERSION)
export KUBEBUILDER_ASSETS ?= $(KUBE_ASSETS)
kube-test-bins: $(KUBE_ASSETS)/kube-apiserver $(KUBE_ASSETS)/etcd

# What the release build stamps, so /version reports the real version.
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=v$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean

$(KUBE_ASSETS)/kube-apiserver: tools/kube/go.mod
	@mkdir -p $(KUBE_ASSETS)
	GOWORK=off go build -C tools/kube -o $@ -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/cmd/kube-apiserver

$(CURDIR)/.bin/etcd-$(ETCD_VERSION)/etcd: tools/etcd/go.mod
	@mkdir -p $(dir $@)
	GOWORK=off go build -C tools/etcd -o $@ go.etcd.io/etcd/server/v3

$(KUBE_ASSETS)/etcd: $(CURDIR)/.bin/etcd-$(ETCD_VERSION)/etcd
	ln -sf ../etcd-$(ETCD_VERSION)/etcd $@

## kapp-crds: regenerate the kapp-controller CRDs the Kubernetes driver tests
## register (committed), from carvel.dev/kapp-controller's own crds.yml. The
## module proxy serves it as an exact version; its checksum is not in the
## checksum database, hence GONOSUMDB for that module only.
KAPP_VERSION := v0.53.1
kapp-crds:
	@dir=$$(GOWORK=off GONOSUMDB=carvel.dev/kapp-controller go mod download -json carvel.dev/kapp-controller@$(KAPP_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p'); \
	test -n "$$dir" || { echo "could not download carvel.dev/kapp-controller@$(KAPP_VERSION)" >&2; exit 1; }; \
	GOWORK=off go run -C tools/kapp . "$$dir" $(CURDIR)/services/lifecycle/target/kubernetes/kubetest/testdata/kapp-controller-crds.yaml

## tools: build the pinned code generators into .bin/ (first build ≈ 1.5 min)
tools:
	@mkdir -p .bin
	GOWORK=off go build -C tools -o $(CURDIR)/.bin/ $(TOOLS)

## generate: regenerate gen/ from proto/
generate: tools
	buf generate

## verify: everything CI checks besides tests
verify: verify-generate buf-lint buf-format buf-breaking fmt vet check-boundaries lint

## verify-generate: fail when gen/ is not what proto/ generates
verify-generate: generate
	@git add -N gen >/dev/null 2>&1 || true
	@git diff --exit-code -- gen || (echo "gen/ is stale: run 'make generate' and commit the result" >&2; exit 1)

## check-boundaries: gen/ imports no service (golangci-lint's depguard rules
## in .golangci.yml check every other boundary; gen/ is not linted)
check-boundaries:
	@bad=$$(cd gen && go list -deps ./... | grep '^github.com/vcfsm/vcfsm/services' || true); \
	if [ -n "$$bad" ]; then echo "gen/ must not import services: $$bad" >&2; exit 1; fi

buf-lint: tools
	buf lint

buf-format: tools
	@buf format -d --exit-code || (echo "proto files are not buf-formatted: run 'buf format -w'" >&2; exit 1)

## buf-breaking: the contracts must not break compared with main (or, on
## main itself, with the previous commit), once contracts exist there
buf-breaking: tools
	@base=""; \
	if git rev-parse -q --verify main >/dev/null && [ "$$(git rev-parse main)" != "$$(git rev-parse HEAD)" ]; then base=$$(git rev-parse main); \
	elif git rev-parse -q --verify HEAD~1 >/dev/null; then base=$$(git rev-parse HEAD~1); fi; \
	if [ -n "$$base" ] && git cat-file -e "$$base:buf.yaml" 2>/dev/null; then \
		echo "buf breaking against $$base"; buf breaking --against ".git#ref=$$base"; \
	else echo "no earlier commit with contracts: skipping buf breaking"; fi

## lint: golangci-lint (pinned in tools/lint) over every module
lint: .bin/golangci-lint
	@set -e; for m in $(MODULES); do [ "$$m" = gen ] && continue; echo "== lint $$m"; (cd $$m && $(CURDIR)/.bin/golangci-lint run --config $(CURDIR)/.golangci.yml ./...); done

.bin/golangci-lint: tools/lint/go.mod
	@mkdir -p .bin
	GOWORK=off go build -C tools/lint -o $(CURDIR)/.bin/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/')); if [ -n "$$out" ]; then echo "gofmt needed: $$out" >&2; exit 1; fi

vet:
	@set -e; for m in $(MODULES); do (cd $$m && go vet -tags compose ./...); done

## bench: every benchmark, figures in each service's README
bench:
	@set -e; for m in $(MODULES); do echo "== $$m"; (cd $$m && go test -run '^$$' -bench . -benchmem ./...); done

## fuzz: run every fuzz target for FUZZTIME (default 30s) each
fuzz:
	scripts/fuzz.sh $(or $(FUZZTIME),30s)

tidy:
	@set -e; for m in $(MODULES); do (cd $$m && go mod tidy); done

clean:
	rm -rf bin data
