# structgen — build and test entry points. `make test` is the README's test command.
GO ?= go

.PHONY: test test-pure vet fmt-check build

# All tests (the README's test command; .ci/run runs exactly this).
test:
	$(GO) test ./...

# Pure-Go packages only, no C toolchain needed.
test-pure:
	CGO_ENABLED=0 $(GO) test ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

build:
	$(GO) build -o bin/structgen ./cmd/structgen
