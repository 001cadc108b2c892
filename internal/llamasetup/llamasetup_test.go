package llamasetup

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseIncludePath(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"gcc", `ignoring nonexistent directory "/usr/local/include/x86_64-linux-gnu"
#include "..." search starts here:
#include <...> search starts here:
 /usr/include/c++/12
 /usr/local/include
 /usr/include
End of search list.
`, []string{"/usr/include/c++/12", "/usr/local/include", "/usr/include"}},
		{"clang", `#include <...> search starts here:
 /opt/homebrew/include
 /Library/Developer/CommandLineTools/SDKs/MacOSX.sdk/System/Library/Frameworks (framework directory)
End of search list.
 /not/a/dir
`, []string{"/opt/homebrew/include", "/Library/Developer/CommandLineTools/SDKs/MacOSX.sdk/System/Library/Frameworks"}},
		{"nothing", "cc: error: no input files\n", nil},
	} {
		if got := parseIncludePath([]byte(tc.out)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"-I/root/.cache/structgen/llama/include": "-I/root/.cache/structgen/llama/include",
		"-I/home/a b/.cache":                     "'-I/home/a b/.cache'",
		"-I/home/it's/x":                         `"-I/home/it's/x"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv(CacheEnv, "/tmp/sg-cache")
	if d, err := CacheDir(); err != nil || d != "/tmp/sg-cache" {
		t.Errorf("CacheDir with %s set: %q, %v", CacheEnv, d, err)
	}
	t.Setenv(CacheEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	t.Setenv("HOME", "/tmp/home")
	want := "/tmp/xdg/structgen"
	if d, _ := os.UserCacheDir(); d != "/tmp/xdg" {
		want = filepath.Join(d, "structgen") // not Linux
	}
	if d, err := CacheDir(); err != nil || d != want {
		t.Errorf("CacheDir: %q, %v; want %q", d, err, want)
	}
}

// fakeCompiler makes $CXX a script that prints dirs as its include path.
func fakeCompiler(t *testing.T, dirs ...string) {
	t.Helper()
	script := "#!/bin/sh\n{\necho '#include <...> search starts here:'\n"
	for _, d := range dirs {
		script += "echo ' " + d + "'\n"
	}
	script += "echo 'End of search list.'\n} >&2\n"
	cxx := filepath.Join(t.TempDir(), "fake-c++")
	if err := os.WriteFile(cxx, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CXX", cxx)
}

func writeHeader(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("/* header */\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The system headers are looked for on the compiler's include path, and
// missing ones are named with their Debian packages.
func TestSystemHeaders(t *testing.T) {
	ctx := context.Background()
	a, b := t.TempDir(), t.TempDir()
	writeHeader(t, a, "nlohmann/json.hpp")
	fakeCompiler(t, a, b)
	err := systemSetup(ctx, Options{NoInstall: true}, func(string, ...any) {})
	if err == nil || !strings.Contains(err.Error(), "stb/stb_image.h") || strings.Contains(err.Error(), "nlohmann/json.hpp,") || !strings.Contains(err.Error(), "libstb-dev") {
		t.Errorf("one header missing: %v", err)
	}
	writeHeader(t, b, "stb/stb_image.h")
	if err := systemSetup(ctx, Options{NoInstall: true}, func(string, ...any) {}); err != nil {
		t.Errorf("both headers on the include path: %v", err)
	}
}

// Run prints the cache's include folder and the ollama module's two
// include folders, and records them in the cache.
func TestRun(t *testing.T) {
	sys := t.TempDir()
	writeHeader(t, sys, "nlohmann/json.hpp")
	writeHeader(t, sys, "stb/stb_image.h")
	fakeCompiler(t, sys)
	cache := t.TempDir()
	// A miniaudio.h already in the cache is kept (no download).
	writeHeader(t, cache, "llama/include/miniaudio/miniaudio.h")
	flags, err := Run(context.Background(), Options{Cache: cache, NoInstall: true, Portable: true})
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(flags)
	if len(f) != 3 || f[0] != "-I"+filepath.Join(cache, "llama", "include") ||
		!strings.HasSuffix(f[1], "/llama/llama.cpp/include") || !strings.HasSuffix(f[2], "/ml/backend/ggml/ggml/include") ||
		!strings.Contains(f[1], "github.com/ollama/ollama@v0.24.0") {
		t.Fatalf("flags %q", flags)
	}
	for _, h := range ollamaHeaders {
		dir := strings.TrimPrefix(f[1], "-I")
		if strings.HasPrefix(h, "ml/") {
			dir = strings.TrimPrefix(f[2], "-I")
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(h))); err != nil {
			t.Error(err)
		}
	}
	rec, err := os.ReadFile(filepath.Join(cache, "llama", "cgo-cppflags"))
	if err != nil || string(rec) != flags+"\n" {
		t.Errorf("cgo-cppflags %q, %v", rec, err)
	}
	// Not portable: -march=native last, where the compiler takes it (the
	// fake one takes anything).
	native, err := Run(context.Background(), Options{Cache: cache, NoInstall: true})
	if err != nil || native != flags+" -march=native" {
		t.Errorf("native flags %q, %v", native, err)
	}
}
