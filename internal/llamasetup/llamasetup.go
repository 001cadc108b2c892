// Package llamasetup prepares a machine to build structgen's llama.cpp
// adapter (engine/llamacpp, build tag llamacpp) and computes the
// CGO_CPPFLAGS that build needs. `structgen setup` runs it; so does
// scripts/setup-llama.sh, which is a thin wrapper around that command.
//
// llama.cpp is built through github.com/ollama/ollama/llama (v0.24.0).
// Go strips every vendor/ folder from module zips, so three headers that
// llama.cpp keeps in llama.cpp/vendor/ are missing from the module cache
// and must come from elsewhere:
//
//	nlohmann/json.hpp      Debian nlohmann-json3-dev (found on the compiler's include path)
//	stb/stb_image.h        Debian libstb-dev         (found on the compiler's include path)
//	miniaudio/miniaudio.h  the root of the Go module github.com/gen2brain/malgo@v0.11.24,
//	                       copied to CacheDir()/llama/include/miniaudio/
//
// engine/llamacpp also includes llama.h and ggml.h from the ollama module
// itself, so those two folders of the module go on the include path too.
//
// The flags name only the per-user cache and the module cache, never the
// folder of a checkout, so every checkout of structgen and every module
// that requires it prints the same flags and reuses the one build of
// llama.cpp that the Go build cache keeps (its key includes CGO_CPPFLAGS).
// They end with -march=native (unless Options.Portable): the build is for
// the CPU it runs on, several times faster than the module's plain -O3.
//
// Run is idempotent: once everything is in place it only runs `go list`
// and the compiler's include-path query (well under a second).
package llamasetup

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

// Modules the setup takes files from.
const (
	OllamaModule = "github.com/ollama/ollama"
	MalgoModule  = "github.com/gen2brain/malgo"
	// MalgoVersion is the malgo release whose miniaudio.h matches the
	// llama.cpp of ollama v0.24.0 (mtmd's audio helper includes it).
	MalgoVersion = "v0.11.24"
	// CacheEnv overrides CacheDir.
	CacheEnv = "STRUCTGEN_CACHE"
)

// systemHeaders are the headers that must be on the C++ compiler's
// include path, with the Debian package that provides each.
var systemHeaders = []struct{ header, debian string }{
	{"nlohmann/json.hpp", "nlohmann-json3-dev"},
	{"stb/stb_image.h", "libstb-dev"},
}

// ollamaHeaders are the folders of the ollama module that engine/llamacpp
// includes (llama.h and ggml.h), each with the header that must be there.
var ollamaHeaders = []string{
	"llama/llama.cpp/include/llama.h",
	"ml/backend/ggml/ggml/include/ggml.h",
}

// Options configure Run. The zero value checks and installs what is
// missing for the module in the current directory.
type Options struct {
	// Dir is the directory whose build the flags are for: the ollama
	// module is looked up in its module's build list. "" is the current
	// directory. Outside any module the version linked into this program
	// is used.
	Dir string
	// Cache is where miniaudio.h goes; "" is CacheDir().
	Cache string
	// NoInstall reports missing system headers as an error instead of
	// installing them with apt-get.
	NoInstall bool
	// Log receives progress lines (installs, downloads); nil drops them.
	Log io.Writer
	// Portable leaves -march=native out of the flags. By default
	// llama.cpp is built for the CPU of the machine that builds it, as
	// llama.cpp's own build does (GGML_NATIVE): the cgo build of the
	// ollama module passes only -O3, so without it ggml's kernels are
	// plain x86-64 (or armv8) code, and a decode step of the
	// 128k-vocabulary test model costs 6.6 ms of CPU instead of 1.2 ms
	// (AVX2/AVX-512/F16C), with no gain from batching. A portable build
	// runs on any CPU of the architecture; a native one only on CPUs like
	// the builder's.
	Portable bool
}

// CacheDir is $STRUCTGEN_CACHE, or structgen in the user's cache folder
// (${XDG_CACHE_HOME:-$HOME/.cache}/structgen on Linux): one folder per
// user, so that the flags are the same in every checkout.
func CacheDir() (string, error) {
	if d := os.Getenv(CacheEnv); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder (set %s): %w", CacheEnv, err)
	}
	return filepath.Join(d, "structgen"), nil
}

// Run makes sure every header the llama.cpp build needs is in place
// (installing the Debian packages and copying miniaudio.h when they are
// missing) and returns the value CGO_CPPFLAGS needs. It also writes that
// value to <cache>/llama/cgo-cppflags.
func Run(ctx context.Context, o Options) (string, error) {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "structgen setup: "+format+"\n", args...)
		}
	}
	cache := o.Cache
	if cache == "" {
		var err error
		if cache, err = CacheDir(); err != nil {
			return "", err
		}
	}
	if err := systemSetup(ctx, o, logf); err != nil {
		return "", err
	}
	inc := filepath.Join(cache, "llama", "include")
	if err := miniaudio(ctx, inc, logf); err != nil {
		return "", err
	}
	mod, err := ollamaDir(ctx, o.Dir, logf)
	if err != nil {
		return "", err
	}
	dirs := []string{inc}
	for _, h := range ollamaHeaders {
		if _, err := os.Stat(filepath.Join(mod, h)); err != nil {
			return "", fmt.Errorf("%s has no %s: is %s pinned at v0.24.0 (the last release with the llama package)? %w", mod, h, OllamaModule, err)
		}
		dirs = append(dirs, filepath.Join(mod, filepath.Dir(h)))
	}
	flags := make([]string, len(dirs))
	for i, d := range dirs {
		flags[i] = quote("-I" + d)
	}
	if !o.Portable && compilerAccepts(ctx, nativeFlag) {
		flags = append(flags, nativeFlag)
	}
	s := strings.Join(flags, " ")
	if err := os.WriteFile(filepath.Join(cache, "llama", "cgo-cppflags"), []byte(s+"\n"), 0o644); err != nil {
		return "", err
	}
	return s, nil
}

// quote quotes a flag the way cmd/go splits CGO_CPPFLAGS (single quotes
// around a word with spaces or quotes in it).
func quote(s string) string {
	if !strings.ContainsAny(s, " \t\n'\"") {
		return s
	}
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return `"` + s + `"`
}

// systemSetup finds the system headers on the C++ compiler's include path
// and installs the Debian packages of the missing ones.
func systemSetup(ctx context.Context, o Options, logf func(string, ...any)) error {
	dirs := includePath(ctx)
	var missing, pkgs []string
	for _, h := range systemHeaders {
		if !found(dirs, h.header) {
			missing = append(missing, h.header)
			pkgs = append(pkgs, h.debian)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	how := fmt.Sprintf("install them (Debian/Ubuntu: apt-get install %s; elsewhere nlohmann-json and stb from your package manager) or put their folder in CGO_CPPFLAGS with -I",
		strings.Join(pkgs, " "))
	if o.NoInstall {
		return fmt.Errorf("missing C++ headers %s: %s", strings.Join(missing, ", "), how)
	}
	if runtime.GOOS != "linux" {
		return fmt.Errorf("missing C++ headers %s: %s", strings.Join(missing, ", "), how)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("missing C++ headers %s and apt-get is not available: %s", strings.Join(missing, ", "), how)
	}
	var sudo []string
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("sudo"); err != nil {
			return fmt.Errorf("missing C++ headers %s: run this as root, or %s", strings.Join(missing, ", "), how)
		}
		sudo = []string{"sudo", "-n"}
	}
	logf("installing %s", strings.Join(pkgs, " "))
	install := append(append(sudo[:len(sudo):len(sudo)], "apt-get", "install", "-y", "-q", "--no-install-recommends"), pkgs...)
	// Try without refreshing the package lists first (fast on a warm
	// machine); a fresh container usually has none, so update and retry.
	if err := runQuiet(ctx, o.Log, install...); err != nil {
		if err := runQuiet(ctx, o.Log, append(sudo[:len(sudo):len(sudo)], "apt-get", "update", "-q")...); err != nil {
			return fmt.Errorf("apt-get update: %w (%s)", err, how)
		}
		if err := runQuiet(ctx, o.Log, install...); err != nil {
			return fmt.Errorf("apt-get install %s: %w", strings.Join(pkgs, " "), err)
		}
	}
	dirs = includePath(ctx)
	for _, h := range missing {
		if !found(dirs, h) {
			return fmt.Errorf("apt-get installed %s but the compiler still does not find %s", strings.Join(pkgs, " "), h)
		}
	}
	return nil
}

// runQuiet runs a command with its output sent to log (nil: dropped) and
// the environment of a non-interactive install.
func runQuiet(ctx context.Context, log io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdout, cmd.Stderr = log, log
	return cmd.Run()
}

func found(dirs []string, header string) bool {
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, header)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// nativeFlag makes gcc and clang generate code for the building CPU.
const nativeFlag = "-march=native"

// compilerAccepts reports whether the C++ compiler cgo uses takes flag.
func compilerAccepts(ctx context.Context, flag string) bool {
	cxx := strings.Fields(goEnv(ctx, "CXX"))
	if len(cxx) == 0 {
		return false
	}
	cmd := exec.CommandContext(ctx, cxx[0], append(cxx[1:], flag, "-E", "-x", "c++", os.DevNull)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	return cmd.Run() == nil
}

// includePath returns the folders the C++ compiler cgo uses ($CXX, or go
// env CXX) searches for <...> includes, as it prints them with -v; or
// /usr/local/include and /usr/include when it cannot be asked.
func includePath(ctx context.Context) []string {
	fallback := []string{"/usr/local/include", "/usr/include"}
	cxx := strings.Fields(goEnv(ctx, "CXX"))
	if len(cxx) == 0 {
		return fallback
	}
	cmd := exec.CommandContext(ctx, cxx[0], append(cxx[1:], "-E", "-x", "c++", "-v", os.DevNull)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return fallback
	}
	dirs := parseIncludePath(stderr.Bytes())
	if len(dirs) == 0 {
		return fallback
	}
	return dirs
}

// parseIncludePath reads the <...> search list from the output of
// `cc -E -v` (GCC and Clang print the same markers).
func parseIncludePath(out []byte) []string {
	var dirs []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#include <...> search starts here:"):
			in = true
		case strings.HasPrefix(line, "End of search list."):
			return dirs
		case in && strings.HasPrefix(line, " "):
			d := strings.TrimSpace(line)
			d = strings.TrimSuffix(d, " (framework directory)")
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// goEnv returns one variable of `go env` ("" when go cannot be run).
func goEnv(ctx context.Context, name string) string {
	out, err := exec.CommandContext(ctx, "go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// miniaudio copies miniaudio.h from the malgo module into inc/miniaudio.
func miniaudio(ctx context.Context, inc string, logf func(string, ...any)) error {
	dst := filepath.Join(inc, "miniaudio", "miniaudio.h")
	if st, err := os.Stat(dst); err == nil && st.Size() > 0 {
		return nil
	}
	logf("fetching miniaudio.h from %s@%s", MalgoModule, MalgoVersion)
	dir, err := download(ctx, MalgoModule, MalgoVersion)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(dir, "miniaudio.h"))
	if err != nil {
		return fmt.Errorf("%s@%s: %w", MalgoModule, MalgoVersion, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// Write and rename, so that a concurrent run never sees half a file.
	tmp, err := os.CreateTemp(filepath.Dir(dst), "miniaudio.h.*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// moduleInfo is what `go list -m -json` and `go mod download -json` print.
type moduleInfo struct {
	Path, Version, Dir, Error string
	Replace                   *moduleInfo
}

// ollamaDir returns the folder of the ollama module that a build in dir
// uses: from the build list of dir's module, or, outside a module (or one
// that does not require ollama), the version linked into this program.
func ollamaDir(ctx context.Context, dir string, logf func(string, ...any)) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", OllamaModule)
	cmd.Dir = dir
	cmd.Stderr = io.Discard
	if out, err := cmd.Output(); err == nil {
		var m moduleInfo
		if err := json.Unmarshal(out, &m); err == nil {
			if m.Replace != nil {
				m = *m.Replace
			}
			if m.Dir != "" {
				return m.Dir, nil
			}
			if m.Version != "" {
				logf("downloading %s@%s", m.Path, m.Version)
				return download(ctx, m.Path, m.Version)
			}
		}
	}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		for _, d := range bi.Deps {
			if d.Path != OllamaModule {
				continue
			}
			if d.Replace != nil {
				if d.Replace.Version == "" {
					return d.Replace.Path, nil
				}
				d = d.Replace
			}
			logf("downloading %s@%s", d.Path, d.Version)
			return download(ctx, d.Path, d.Version)
		}
	}
	return "", fmt.Errorf("cannot tell which version of %s the build uses: run this in your module's folder after `go get github.com/structgen/structgen`", OllamaModule)
}

// download runs `go mod download -json path@version` outside any module
// (so no go.mod or go.sum is touched) and returns the module's folder.
func download(ctx context.Context, path, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "structgen-setup")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path+"@"+version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GO111MODULE=on", "GOFLAGS=-mod=mod", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var m moduleInfo
	if jerr := json.Unmarshal(out, &m); jerr == nil && m.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", path, version, m.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", path, version, err, strings.TrimSpace(stderr.String()))
	}
	if m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s printed no folder", path, version)
	}
	return m.Dir, nil
}
