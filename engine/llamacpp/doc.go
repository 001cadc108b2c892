// Package llamacpp runs GGUF models through llama.cpp and adapts them to
// engine.Model. It is the only cgo in structgen and is built only with the
// build tag llamacpp:
//
//	export CGO_CPPFLAGS="$(scripts/setup-llama.sh)"   # once per machine, see the script
//	go test -tags llamacpp ./engine/llamacpp/
//
// llama.cpp comes from github.com/ollama/ollama/llama, pinned at v0.24.0 (the
// last ollama release with that package). Its Go wrapper is used for the
// grammar engine (GrammarPeer) and the backend set-up; the model itself is
// driven through llama.h directly, because the wrapper copies the logits
// into a new slice on every step, never frees a context, and does not expose
// the chat template, token attributes or the trained context length.
//
// Without the tag only the pure-Go part builds: the checks a model file
// must pass before it is handed to C (Inspect: GGUF magic, header,
// truncation, architecture, context length). llama.cpp aborts the process
// on some malformed input, so Load runs those checks first and turns every
// failure into a *LoadError naming the file.
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
