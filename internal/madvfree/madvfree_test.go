package madvfree

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestGodebugWith(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		added   bool
	}{
		{"", "madvdontneed=0", true},
		{"gctrace=1", "gctrace=1,madvdontneed=0", true},
		{"madvdontneed=1", "madvdontneed=1", false},
		{"gctrace=1,madvdontneed=0", "gctrace=1,madvdontneed=0", false},
		{"gctrace=1, madvdontneed=1", "gctrace=1, madvdontneed=1", false},
		{"madvdontneedx=1", "madvdontneedx=1,madvdontneed=0", true},
	} {
		out, added := godebugWith(tc.in)
		if out != tc.out || added != tc.added {
			t.Errorf("godebugWith(%q) = %q, %v; want %q, %v", tc.in, out, added, tc.out, tc.added)
		}
	}
}

const helperEnv = "STRUCTGEN_MADVFREE_HELPER"

// TestHelperProcess is the program TestReexec runs: it calls Reexec,
// then counts the page faults of taking again 64 MB it gave back.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("run by TestReexec")
	}
	if err := Reexec(); err != nil {
		fmt.Println("exec failed:", err)
		os.Exit(3)
	}
	fmt.Printf("%s GODEBUG=%s faults=%d\n", Mode(), os.Getenv("GODEBUG"), reuseFaults())
	os.Exit(0)
}

var sink [][]byte

// reuseFaults touches 64 MB, gives it back (debug.FreeOSMemory), and
// returns the minor faults of touching 64 MB again.
func reuseFaults() int64 {
	touch := func() {
		for range 64 {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			sink = append(sink, b)
		}
	}
	touch()
	sink = nil
	debug.FreeOSMemory()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	touch()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	sink = nil
	return ru1.Minflt - ru0.Minflt
}

// TestReexec runs the helper twice: with GODEBUG empty, Reexec runs it
// again with MADV_FREE, and taking back memory it gave back costs few
// faults; with GODEBUG=madvdontneed=1 (kept as it is), it costs one per
// page.
func TestReexec(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("MADV_FREE is Linux's")
	}
	run := func(godebug string) (string, int64) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperEnv+"=1", "GODEBUG="+godebug)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("GODEBUG=%q: %v\n%s", godebug, err, out)
		}
		line := strings.TrimSpace(string(out))
		mode, line, _ := strings.Cut(line, " ")
		i := strings.LastIndex(line, " faults=")
		if i < 0 || !strings.HasPrefix(line, "GODEBUG=") {
			t.Fatalf("GODEBUG=%q: output %q", godebug, out)
		}
		n, err := strconv.ParseInt(line[i+len(" faults="):], 10, 64)
		if err != nil {
			t.Fatalf("GODEBUG=%q: output %q", godebug, out)
		}
		return mode + " " + line[len("GODEBUG="):i], n
	}
	env, free := run("")
	if env != "MADV_FREE "+Setting {
		t.Errorf("after Reexec: %q, want %q", env, "MADV_FREE "+Setting)
	}
	env, dontneed := run("madvdontneed=1")
	if env != "MADV_DONTNEED madvdontneed=1" {
		t.Errorf("GODEBUG=madvdontneed=1 became %q", env)
	}
	t.Logf("faults taking back 64 MB: %d with MADV_FREE, %d with MADV_DONTNEED", free, dontneed)
	// 64 MB is 16,384 pages: given back with MADV_DONTNEED each faults
	// again; with MADV_FREE only what the system reclaimed meanwhile.
	if dontneed < 8_000 || free*4 > dontneed {
		t.Errorf("faults taking back 64 MB: %d with MADV_FREE, %d with MADV_DONTNEED", free, dontneed)
	}
}

func TestMode(t *testing.T) {
	for _, tc := range []struct{ godebug, want string }{
		{"", "MADV_DONTNEED"},
		{"madvdontneed=0", "MADV_FREE"},
		{"gctrace=1, madvdontneed=0", "MADV_FREE"},
		{"madvdontneed=0,madvdontneed=1", "MADV_DONTNEED"},
		{"madvdontneed=1,madvdontneed=0", "MADV_FREE"},
	} {
		t.Setenv("GODEBUG", tc.godebug)
		want := tc.want
		if runtime.GOOS != "linux" {
			want = ""
		}
		if got := Mode(); got != want {
			t.Errorf("GODEBUG=%q: Mode() = %q, want %q", tc.godebug, got, want)
		}
	}
}
