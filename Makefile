# structgen — build and test entry points. `make test` is the README's test command.
GO ?= go

.PHONY: test test-pure vet fmt-check mod-check build build-pure bench bench-batch bench-serve llama-setup test-llama vet-llama

# llama.cpp (engine/llamacpp, build tag llamacpp, the only cgo): `structgen
# setup` (internal/llamasetup) installs the headers Go strips from the ollama
# module (apt-get nlohmann-json3-dev libstb-dev; miniaudio.h into
# ~/.cache/structgen/llama) and prints the CGO_CPPFLAGS the build needs. It
# is idempotent and fast once done. The first build of llama.cpp takes
# minutes (2 cores); the Go build cache keeps it, keyed on CGO_CPPFLAGS, so
# always build through these targets or the flags setup prints.
LLAMA_TAGS := llamacpp
LLAMA_ENV = flags=$$($(GO) run ./cmd/structgen setup) && CGO_CPPFLAGS="$$flags$${CGO_CPPFLAGS:+ $$CGO_CPPFLAGS}"

llama-setup:
	@$(GO) run ./cmd/structgen setup >/dev/null

# All tests (the README's test command; .ci/run runs exactly this), the
# llama.cpp package included, then under the race detector the concurrency
# tests of the mask automaton (one Compiled shared by many matchers, also
# while Precompute runs) and the
# batched engine's scheduler tests (fake model, no cgo model) and the
# server's pure-Go tests (a byte-level model: panics, failures, drain).
test:
	@$(LLAMA_ENV) $(GO) test -tags $(LLAMA_TAGS) ./...
	$(GO) test -race -run 'TestConcurrentMatchers|TestPrecompute' ./mask
	$(GO) test -race -run 'TestBatched|TestCancel|TestQueue|TestAdmission|TestGenerateN|TestSlowStream|TestGrammarCache|TestPromptCache|TestStatsSettled|TestPrecomputeEnds|TestMaskOverlap|TestCompileOverlap' ./engine
	$(GO) test -race ./server

# The llama.cpp package alone.
test-llama:
	@$(LLAMA_ENV) $(GO) test -tags $(LLAMA_TAGS) ./engine/llamacpp/...

# Pure-Go packages only, no C toolchain needed.
test-pure:
	CGO_ENABLED=0 $(GO) test ./...

vet: vet-llama
	$(GO) vet ./...

# go vet with the llamacpp tag (covers the cgo package and every untagged file).
vet-llama:
	@$(LLAMA_ENV) $(GO) vet -tags $(LLAMA_TAGS) ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# go.mod and go.sum must be what `go mod tidy` makes of the code (every
# build tag counts): no unused requirement, none missing, direct ones not
# marked indirect. Prints the diff and fails otherwise.
mod-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# The CLI with llama.cpp support (--model, bench --peer).
build:
	@$(LLAMA_ENV) $(GO) build -tags $(LLAMA_TAGS) -o bin/structgen ./cmd/structgen

# The CLI without cgo (no-model mode, grammar, check, bench without peer).
build-pure:
	CGO_ENABLED=0 $(GO) build -o bin/structgen ./cmd/structgen

# The mask benchmark with llama.cpp's grammar engine as the peer.
bench: build
	bin/structgen bench --peer

# Batched decoding: structgen's engine (schema, unconstrained) and Ollama's
# sampler with llama.cpp's grammar at concurrency 1-8 on the 128k-vocabulary
# model and stories260K (internal/batchbench).
bench-batch:
	@$(LLAMA_ENV) $(GO) build -tags $(LLAMA_TAGS) -o bin/batchbench ./internal/batchbench/cmd/batchbench
	bin/batchbench -model llama3 -conc 1,2,4,8 -runs 3
	bin/batchbench -model stories -conc 1,2,4 -runs 3 -max-tokens 500

# Ollama built from the module version go.mod pins (github.com/ollama/ollama),
# with the same CGO_CPPFLAGS, so its llama.cpp is the one structgen links: the
# serving peer of bench-serve. No source of it is kept here; go install
# builds it from the module cache (~8 min the first time on 2 cores, less
# once llama.cpp is in the build cache).
OLLAMA_VERSION = $$($(GO) list -m -f '{{.Version}}' github.com/ollama/ollama)
bin/ollama: go.mod
	@v=$(OLLAMA_VERSION) && $(LLAMA_ENV) GOBIN=$(CURDIR)/bin $(GO) install \
		-ldflags="-X github.com/ollama/ollama/version.Version=$${v#v}" github.com/ollama/ollama@$$v

# structgen serve against ollama serve on the same GGUFs, schema and requests
# (internal/servebench). BENCH_SERVE_FLAGS adds flags, e.g. -runs 5 -conc 4.
bench-serve: build bin/ollama
	$(GO) run ./internal/servebench/cmd/servebench -structgen bin/structgen -ollama bin/ollama $(BENCH_SERVE_FLAGS)
