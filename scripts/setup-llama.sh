#!/usr/bin/env bash
# setup-llama.sh — prepare this machine to build engine/llamacpp (build tag
# `llamacpp`), the only cgo package of structgen.
#
# It builds llama.cpp through github.com/ollama/ollama/llama (pinned in
# go.mod at v0.24.0). Go strips every vendor/ folder from module zips, so
# three headers llama.cpp keeps in llama.cpp/vendor/ are missing from the
# module cache and must come from elsewhere:
#   nlohmann/json.hpp     Debian nlohmann-json3-dev  (/usr/include, found by default)
#   stb/stb_image.h       Debian libstb-dev          (/usr/include, found by default)
#   miniaudio/miniaudio.h miniaudio.h at the root of the Go module
#                         github.com/gen2brain/malgo@v0.11.24, copied to
#                         $STRUCTGEN_CACHE/llama/include/miniaudio/
# engine/llamacpp also includes llama.h and ggml.h from the ollama module
# itself, so their folders go on the include path too.
#
# What it does (idempotent; well under a second when everything is there):
#   1. apt-get installs nlohmann-json3-dev and libstb-dev if their headers
#      are missing (non-interactive; uses sudo when not root);
#   2. copies miniaudio.h into $STRUCTGEN_CACHE/llama/include/miniaudio/;
#   3. prints the value CGO_CPPFLAGS needs on stdout (and writes it to
#      $STRUCTGEN_CACHE/llama/cgo-cppflags), progress on stderr.
#
# STRUCTGEN_CACHE defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/structgen: one
# folder per user, not per checkout, so that every checkout (and every module
# that requires structgen) prints the same CGO_CPPFLAGS and shares the one
# cached build of llama.cpp in the Go build cache.
#
# Use:
#   make llama-setup                       # just the setup
#   export CGO_CPPFLAGS="$(scripts/setup-llama.sh)"
#   go test -tags llamacpp ./engine/llamacpp/
#
# The first build of the llama package takes ~4-5 minutes on 2 cores; the Go
# build cache keeps it afterwards (keyed on CGO_CPPFLAGS too: always use the
# exact value printed here).
set -euo pipefail

MALGO_VERSION=v0.11.24
OLLAMA_MODULE=github.com/ollama/ollama

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${STRUCTGEN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/structgen}
inc=$cache/llama/include
log() { echo "setup-llama: $*" >&2; }

# 1. System headers.
need=()
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
[ -f /usr/include/stb/stb_image.h ] || need+=(libstb-dev)
if [ ${#need[@]} -gt 0 ]; then
	if ! command -v apt-get >/dev/null 2>&1; then
		log "missing ${need[*]} and apt-get is not available; install the headers nlohmann/json.hpp and stb/stb_image.h into /usr/include by hand"
		exit 1
	fi
	sudo=
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
			log "missing ${need[*]}: run as root or install them with apt-get"
			exit 1
		fi
	fi
	log "installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Try without refreshing the package lists first (fast on a warm
	# machine); a fresh container usually has none, so update and retry.
	if ! $sudo apt-get install -y -q --no-install-recommends "${need[@]}" >&2; then
		$sudo apt-get update -q >&2
		$sudo apt-get install -y -q --no-install-recommends "${need[@]}" >&2
	fi
	[ -f /usr/include/nlohmann/json.hpp ] && [ -f /usr/include/stb/stb_image.h ] || {
		log "apt-get finished but the headers are still missing"
		exit 1
	}
fi

# 2. miniaudio.h from the malgo module (outside this module, so go.mod and
# go.sum stay untouched).
if [ ! -s "$inc/miniaudio/miniaudio.h" ]; then
	log "fetching miniaudio.h from github.com/gen2brain/malgo@$MALGO_VERSION"
	dir=$(cd /tmp && GO111MODULE=on GOFLAGS=-mod=mod go mod download -json "github.com/gen2brain/malgo@$MALGO_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	if [ -z "$dir" ] || [ ! -f "$dir/miniaudio.h" ]; then
		log "go mod download github.com/gen2brain/malgo@$MALGO_VERSION gave no miniaudio.h (dir: '${dir}')"
		exit 1
	fi
	mkdir -p "$inc/miniaudio"
	cp "$dir/miniaudio.h" "$inc/miniaudio/miniaudio.h.tmp"
	chmod 644 "$inc/miniaudio/miniaudio.h.tmp"
	mv "$inc/miniaudio/miniaudio.h.tmp" "$inc/miniaudio/miniaudio.h"
fi

# 3. llama.h and ggml.h from the pinned ollama module.
cd "$root"
mod=$(go list -m -f '{{.Dir}}' "$OLLAMA_MODULE" 2>/dev/null || true)
if [ -z "$mod" ] || [ ! -d "$mod" ]; then
	log "downloading $OLLAMA_MODULE (pinned in go.mod)"
	go mod download "$OLLAMA_MODULE" >&2
	mod=$(go list -m -f '{{.Dir}}' "$OLLAMA_MODULE")
fi
for h in llama/llama.cpp/include/llama.h ml/backend/ggml/ggml/include/ggml.h; do
	[ -f "$mod/$h" ] || { log "$mod/$h is missing: is $OLLAMA_MODULE pinned at v0.24.0?"; exit 1; }
done

flags="-I$inc -I$mod/llama/llama.cpp/include -I$mod/ml/backend/ggml/ggml/include"
printf '%s\n' "$flags" >"$cache/llama/cgo-cppflags"
printf '%s\n' "$flags"
