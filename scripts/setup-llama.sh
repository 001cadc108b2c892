#!/usr/bin/env bash
# setup-llama.sh — prepare this machine to build engine/llamacpp (build tag
# `llamacpp`) and print the CGO_CPPFLAGS that build needs. A thin wrapper
# around `structgen setup` (package internal/llamasetup says what it
# installs and why); from another module use `go tool structgen setup`
# (README, "From Go").
#
#   export CGO_CPPFLAGS="$(scripts/setup-llama.sh)"
#   go test -tags llamacpp ./engine/llamacpp/
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./cmd/structgen setup "$@"
