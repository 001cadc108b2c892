// Package sharedtest locates the shared data folder (../shared beside the
// repository: DESIGN.md, bench cases, corpus) for tests and benchmarks.
//
// Tests that need it call Dir or Path; when the folder is absent they are
// skipped with a message that says where it was looked for.
package sharedtest

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// EnvVar overrides the location of the shared folder.
const EnvVar = "STRUCTGEN_SHARED"

var (
	once sync.Once
	dir  string
	errS string
)

func locate() {
	if d := os.Getenv(EnvVar); d != "" {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dir = d
			return
		}
		errS = EnvVar + "=" + d + " is not a directory"
		return
	}
	wd, err := os.Getwd()
	if err != nil {
		errS = err.Error()
		return
	}
	// Walk up to the module root (the directory holding go.mod), then
	// look for ../shared beside it.
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			cand := filepath.Join(filepath.Dir(d), "shared")
			if st, err := os.Stat(cand); err == nil && st.IsDir() {
				dir = cand
				return
			}
			errS = "shared data folder not found at " + cand + " (set " + EnvVar + " to override)"
			return
		}
		if filepath.Dir(d) == d {
			errS = "module root (go.mod) not found above " + wd
			return
		}
	}
}

// Find returns the shared folder, or "" and the reason it was not found.
func Find() (string, string) {
	once.Do(locate)
	return dir, errS
}

// Or returns dir if it is set (a command's -shared flag), else the shared
// folder Find locates, else an error saying why there is none.
func Or(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, why := Find()
	if d == "" {
		return "", errors.New(why)
	}
	return d, nil
}

// Dir returns the shared folder or skips the test with a clear message.
func Dir(tb testing.TB) string {
	tb.Helper()
	d, why := Find()
	if d == "" {
		tb.Skipf("skipping: needs ../shared: %s", why)
	}
	return d
}

// Path returns filepath.Join(Dir(tb), elem...) and skips the test if that
// path does not exist.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("skipping: needs %s: %v", p, err)
	}
	return p
}
