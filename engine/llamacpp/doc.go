// Package llamacpp runs GGUF models through llama.cpp and adapts them to
// engine.Model. It is the only cgo in structgen and links llama.cpp only
// with the build tag llamacpp. Without the tag the package still builds,
// in pure Go: Inspect and the other file checks work, and Load,
// NewGrammarPeer and the rest of the llama.cpp API (declared in notag.go
// with the same documentation, so that go doc shows it) return
// ErrNotBuilt.
//
// Building with the tag needs three C++ headers that Go strips from the
// ollama module, and CGO_CPPFLAGS pointing at them; `structgen setup`
// installs them and prints the flags. In this repository:
//
//	export CGO_CPPFLAGS="$(go run ./cmd/structgen setup)"   # or make build / make test
//	go test -tags llamacpp ./engine/llamacpp/
//
// From another module (the setup command pinned with the library):
//
//	go get -tool github.com/structgen/structgen/cmd/structgen
//	export CGO_CPPFLAGS="$(go tool structgen setup)"
//	go build -tags llamacpp .
//
// The first build compiles llama.cpp (about 5 minutes on 2 cores); the Go
// build cache keeps it for every module built with the same flags, and
// the flags name only per-user folders, so they are the same everywhere.
//
// llama.cpp comes from github.com/ollama/ollama/llama, pinned at v0.24.0 (the
// last ollama release with that package). Its Go wrapper is used for the
// grammar engine (GrammarPeer) and the backend set-up; the model itself is
// driven through llama.h directly, because the wrapper copies the logits
// into a new slice on every step, never frees a context, and does not expose
// the chat template, token attributes or the trained context length.
//
// The checks a model file must pass before it is handed to C are pure Go
// (Inspect: GGUF magic, header, truncation, architecture, context length).
// llama.cpp aborts the process on some malformed input, so Load runs those
// checks first and turns every failure into a *LoadError naming the file.
//
// Concurrency: a *Model is one sequence and is not safe for concurrent use
// (Close excepted, which may race with nothing else and is idempotent).
// Load calls are serialized (llama.cpp's log output, which Load captures for
// its error messages, is process-wide). A *GrammarPeer is not safe for
// concurrent use either.
//
// Cost: Load reads the GGUF header in Go, then llama.cpp maps the weights;
// it also renders every token's bytes once (about 30 ms for a 128k
// vocabulary). Decode is a forward pass; Logits borrows llama.cpp's own
// output buffer (no copy). GrammarPeer.Fill costs tens of milliseconds per
// step on a 128k vocabulary: it exists for benchmarks and cross-checks.
package llamacpp

import "errors"

// ErrNotBuilt is what Load, NewGrammarPeer and the other functions of the
// llama.cpp build return in a program built without the llamacpp tag
// (methods of Model and GrammarPeer, which such a program cannot obtain,
// panic with it).
var ErrNotBuilt = errors.New("llamacpp: built without the llamacpp build tag, so llama.cpp is not linked in: build with -tags llamacpp and CGO_CPPFLAGS=\"$(go tool structgen setup)\" (go doc github.com/structgen/structgen/engine/llamacpp)")
