# netprof — `make help` lists the targets.
GO       ?= go
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)

.PHONY: help build generate vmlinux test vet fmt clean

help: ## list the targets
	@grep -hE '^[a-z][a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build bin/netprof (uses the committed BPF objects: no clang needed)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/netprof ./cmd/netprof

generate: ## regenerate the BPF objects and Go bindings from bpf/*.c (clang-19, llvm-19, libbpf-dev)
	$(GO) generate ./bpf

vmlinux: ## regenerate bpf/headers/vmlinux.h from the running kernel's BTF (bpftool)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > bpf/headers/vmlinux.h

test: ## run every test; kernel tests need root (NETPROF_REQUIRE_KERNEL_TESTS=1 makes their skips fail)
	$(GO) test -count=1 -p 1 -timeout 30m ./...

vet: ## go vet and gofmt check
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

.PHONY: bench-traffic
bench-traffic: ## compare netprof's generator with iperf3 on a veth pair: 1/4/16 streams, 3 pairs, 5 s each (root, iperf3; ~2 min; not in test)
	$(GO) run ./traffic/perfcmp $(BENCH_TRAFFIC_FLAGS)

fmt: ## gofmt the Go code
	gofmt -w $$(git ls-files '*.go')

clean: ## remove build output
	rm -rf bin
