package madvfree

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
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
	touchFaults(64)
	sink = nil
	debug.FreeOSMemory()
	n := touchFaults(64)
	sink = nil
	return n
}

// touchFaults allocates mb MB in 1 MB objects (kept in sink), writes a
// byte per 4 KB page, and returns the minor faults that took.
func touchFaults(mb int) int64 {
	_, f0 := ProcUsage()
	for range mb {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		sink = append(sink, b)
	}
	_, f1 := ProcUsage()
	return f1 - f0
}

// TestReexec runs the helper twice: with GODEBUG empty, Reexec runs it
// again with MADV_FREE, and taking back memory it gave back costs few
// faults; with GODEBUG=madvdontneed=1 (kept as it is), it costs one per
// page.
func TestReexec(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("MADV_FREE is Linux's")
	}
	skipHugePages(t)
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

const pretouchHelperEnv = "STRUCTGEN_PRETOUCH_HELPER"

// TestPretouchHelper is the program TestPretouch runs: it calls Reexec,
// Pretouch with the size the environment gives, then counts the page
// faults of growing the heap by 48 MB of 1 MB objects.
func TestPretouchHelper(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(pretouchHelperEnv))
	if err != nil {
		t.Skip("run by TestPretouch")
	}
	if err := Reexec(); err != nil {
		fmt.Println("exec failed:", err)
		os.Exit(3)
	}
	r, err := Pretouch(n)
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	faults := touchFaults(48)
	sink = nil
	fmt.Printf("%s touched=%d pretouch_faults=%d faults=%d\n", Mode(), r.Bytes, r.Faults, faults)
	os.Exit(0)
}

// TestPretouch runs the helper: growing the heap into memory Pretouch
// touched costs few faults, into fresh memory one per page; with Go's
// default release (MADV_DONTNEED) Pretouch does nothing.
func TestPretouch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("MADV_FREE is Linux's")
	}
	skipHugePages(t)
	run := func(n int, godebug string) (mode string, touched, faults int64) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPretouchHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", pretouchHelperEnv, n), "GODEBUG="+godebug)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pretouch %d, GODEBUG=%q: %v\n%s", n, godebug, err, out)
		}
		var pf int64
		if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%s touched=%d pretouch_faults=%d faults=%d", &mode, &touched, &pf, &faults); err != nil {
			t.Fatalf("pretouch %d, GODEBUG=%q: output %q: %v", n, godebug, out, err)
		}
		return mode, touched, faults
	}
	const n = 128 << 20
	mode, touched, with := run(n, "")
	if mode != "MADV_FREE" || touched != n {
		t.Fatalf("Pretouch(%d) after Reexec: mode %s, touched %d", n, mode, touched)
	}
	_, _, without := run(0, "")
	t.Logf("faults growing the heap by 48 MB: %d after Pretouch(128 MiB), %d without", with, without)
	// 48 MB is 12,288 pages.
	if without < 6_000 || with*4 > without {
		t.Errorf("faults growing the heap by 48 MB: %d after Pretouch, %d without", with, without)
	}
	if mode, touched, _ := run(n, "madvdontneed=1"); mode != "MADV_DONTNEED" || touched != 0 {
		t.Errorf("GODEBUG=madvdontneed=1: mode %s, Pretouch touched %d, want nothing", mode, touched)
	}
	if _, err := Pretouch(MaxPretouch + 1); err == nil {
		t.Errorf("Pretouch(MaxPretouch+1): no error")
	}
}

// skipHugePages skips a test that counts faults per 4 KB page where the
// kernel backs all anonymous memory with transparent huge pages (a fault
// per 2 MB page where it can, so fresh memory costs few faults either
// way).
func skipHugePages(t *testing.T) {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err == nil && strings.Contains(string(b), "[always]") {
		t.Skip("transparent huge pages are always on: faults are not per 4 KB page")
	}
}

func TestPretouchResultString(t *testing.T) {
	for _, tc := range []struct {
		r    PretouchResult
		want string
	}{
		{PretouchResult{}, "nothing touched"},
		{PretouchResult{Bytes: 256 << 20, Faults: 65_600, Took: 771400 * time.Microsecond}, "256 MiB, 65600 faults, 771ms"},
		{PretouchResult{Bytes: 3 << 20, Faults: 768, Took: 2600 * time.Microsecond}, "3 MiB, 768 faults, 3ms"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.r, got, tc.want)
		}
	}
}
