# netagent build, test and code generation. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
BENCH_PKGS := ./plugins/kvscheduler/
BENCH_COUNT ?= 5

.PHONY: help run build test test-real-vpp test-short test-prop fuzz tools proto proto-check lint bench bench-models bench-vpp bench-targets

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

run: ## build and run the agent (root) with an embedded etcd and examples/veth-route.yaml
	scripts/run-example.sh

build: ## build every package and command into bin/
	$(GO) build $(PKGS)
	@if [ -d cmd ]; then mkdir -p bin && $(GO) build -o bin/ ./cmd/...; fi

tools: ## install what tests and code generation need (pinned)
	scripts/install-tools.sh proto

test: tools proto-check lint ## the full test suite, as CI runs it (race detector on, VPP tests against vppsim and a real VPP, fuzz targets a few seconds each)
	$(GO) test -race -count=1 -timeout 30m $(PKGS)
	scripts/test-real-vpp.sh
	FUZZ_TIME=5s scripts/fuzz.sh

test-real-vpp: ## the VPP tests against a real VPP: ../shared/vpp (NETAGENT_VPP_DIR), or VPP_API_SOCKET
	scripts/test-real-vpp.sh

test-short: ## quick tests without the race detector
	$(GO) test -short -count=1 $(PKGS)

test-prop: ## property tests of the scheduler with new random seeds (1000 cases each)
	$(GO) test -count=1 -run 'TestProp' ./plugins/kvscheduler/ -rapid.seed=0 -rapid.checks=1000

fuzz: ## run every fuzz target for FUZZ_TIME (default 1m)
	FUZZ_TIME=$${FUZZ_TIME:-1m} scripts/fuzz.sh

proto: ## regenerate the Go code of proto/*.proto
	scripts/gen-proto.sh

proto-check: ## fail when the committed generated code differs from proto/*.proto
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && scripts/gen-proto.sh $$tmp && \
	  for f in $$(cd $$tmp && find . -name '*.pb.go'); do \
	    diff -q $$tmp/$$f $$f >/dev/null || { echo "proto-check: $$f is stale; run make proto" >&2; exit 1; }; \
	  done && echo "proto-check: generated code is up to date"

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

bench: ## scheduler benchmarks W1-W6 (see docs/benchmarks.md); writes bench.txt
	GOMAXPROCS=2 $(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) -timeout 60m $(BENCH_PKGS) | tee bench.txt

bench-models: ## key lookup and value decoding benchmarks of pkg/models
	GOMAXPROCS=2 $(GO) test -run '^$$' -bench . -benchmem ./pkg/models/

bench-targets: ## issue 17's targets on this host, each with its reference measured in the same run (root; ../shared/vpp or NETAGENT_VPP_DIR for the VPP ones; ROUNDS=3); writes bench-targets.txt
	scripts/bench-targets.sh

bench-vpp: ## VPP plugins, 1,000 interfaces and 10,000 routes (see docs/benchmarks.md): vppsim into bench-vpp.txt, then a real VPP (../shared/vpp, NETAGENT_VPP_DIR or VPP_API_SOCKET) into bench-vpp-real.txt
	set -o pipefail; env -u VPP_API_SOCKET -u NETAGENT_VPP_DIR GOMAXPROCS=2 \
	  $(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) -timeout 30m ./plugins/vpp/bench/ | tee bench-vpp.txt
	@set -o pipefail; dir=$${NETAGENT_VPP_DIR:-../shared/vpp}; \
	if [ -n "$${VPP_API_SOCKET:-}" ]; then \
	  echo "bench-vpp: the real VPP at VPP_API_SOCKET=$$VPP_API_SOCKET (ResyncAfterRestart skips: the user's VPP is never restarted)"; \
	elif [ ! -x "$$dir/start.sh" ] || [ "$$(id -u)" -ne 0 ]; then \
	  echo "bench-vpp: SKIPPED the real-VPP run: no VPP build at $$dir (start.sh), or not root; set NETAGENT_VPP_DIR=<VPP build folder> (as root) or VPP_API_SOCKET=/run/vpp/api.sock"; exit 0; \
	else \
	  export NETAGENT_VPP_DIR=$$(cd "$$dir" && pwd -P); echo "bench-vpp: a real VPP of the benchmarks' own from $$NETAGENT_VPP_DIR"; \
	fi; \
	GOMAXPROCS=2 $(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) -timeout 30m ./plugins/vpp/bench/ | tee bench-vpp-real.txt
