// Command structgen generates text that follows a GBNF grammar or a JSON
// Schema: with a GGUF model (llama.cpp builds), or without one, sampling the
// grammar itself (varied, valid test data for a schema).
//
//	structgen --schema order.json -n 100                 # 100 random valid orders, one per line
//	structgen --schema order.json --model m.gguf --prompt "An order for 3 apples:"
//	structgen grammar --schema order.json                # the GBNF the schema becomes
//	structgen check --schema order.json doc.json         # is doc.json valid? does the grammar accept its canonical form?
//	structgen bench                                      # the mask benchmark (../shared/bench)
//	structgen serve --model m.gguf --addr 127.0.0.1:8080  # OpenAI and Ollama APIs (package server)
//	export CGO_CPPFLAGS="$(structgen setup)"              # prepare a build with -tags llamacpp
//
// Exit status: 0 success, 1 failure (bad input file, model, generation,
// rejected document), 2 usage error. Errors are one line on stderr.
//
// --model needs a binary built with llama.cpp (make build, which uses the
// llamacpp build tag); a pure-Go build (go run ./cmd/structgen) rejects it.
// The setup command installs the C++ headers that build needs and prints
// its CGO_CPPFLAGS; it works from any module that requires structgen
// (go tool structgen setup, after go get -tool
// github.com/structgen/structgen/cmd/structgen).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/structgen/structgen/internal/madvfree"
)

func main() {
	if longRunning(os.Args[1:]) {
		// Returns only when the program is not run again (see madvfree).
		if err := madvfree.Reexec(); err != nil {
			fmt.Fprintln(os.Stderr, "structgen: free memory goes back to the system at once (Go's default):", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// longRunning reports whether the command compiles grammars over a long
// life (serve, bench): there a free page the runtime gives back to the
// system costs a fault when a later compilation takes it again, so they
// run with GODEBUG=madvdontneed=0 unless GODEBUG says otherwise
// (internal/madvfree). A one-shot command starts with fresh memory
// anyway.
func longRunning(args []string) bool {
	return len(args) > 0 && (args[0] == "serve" || args[0] == "bench")
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is an error in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// env is what commands read and write.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type cli struct {
	Generate generateCmd `cmd:"" default:"withargs" help:"Generate output that follows a grammar or schema (the default command)."`
	Grammar  grammarCmd  `cmd:"" help:"Print the GBNF grammar of a JSON Schema."`
	Check    checkCmd    `cmd:"" help:"Check whether a grammar or schema accepts an input; report the first rejected byte."`
	Bench    benchCmd    `cmd:"" help:"Run the mask benchmark on the bench cases of the shared folder."`
	Serve    serveCmd    `cmd:"" help:"Serve a model over the OpenAI and Ollama APIs (needs a llama.cpp build)."`
	Setup    setupCmd    `cmd:"" help:"Install what building with -tags llamacpp needs; print its CGO_CPPFLAGS."`
}

// exitPanic carries kong's exit status (help, parse errors) out of Parse.
type exitPanic int

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("structgen"),
		kong.Description("Grammar- and JSON-Schema-constrained generation, with or without a model."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitPanic(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintln(stderr, "structgen:", err)
		return exitFailure
	}
	defer func() {
		if r := recover(); r != nil {
			p, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			code = int(p)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintln(stderr, "structgen:", oneLine(err.Error()))
		return exitUsage
	}
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	if err := kctx.Run(e); err != nil {
		fmt.Fprintln(stderr, "structgen:", oneLine(err.Error()))
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitFailure
	}
	return exitOK
}

// oneLine keeps an error on one line (grammar errors can list several
// problems).
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		rest := strings.Count(s, "\n")
		s = fmt.Sprintf("%s (and %d more lines)", s[:i], rest)
	}
	return s
}

// readInput reads a file, or standard input for "-".
func (e *env) readInput(path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(e.stdin)
	}
	return os.ReadFile(path)
}
