package maskbench

import (
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPinThread checks that pinThread binds the thread to the one CPU
// and that restore gives back the affinity it had.
func TestPinThread(t *testing.T) {
	cpu, _, ok := cpuPair()
	if !ok {
		t.Skip("fewer than two CPUs allowed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, during, after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	restore, err := pinThread(cpu)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SchedGetaffinity(0, &during); err != nil {
		t.Fatal(err)
	}
	if during.Count() != 1 || !during.IsSet(cpu) {
		t.Errorf("pinned to CPU %d, affinity has %d CPUs", cpu, during.Count())
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("affinity not restored: %d CPUs, had %d", after.Count(), before.Count())
	}
	if _, err := pinThread(1 << 20); err == nil {
		t.Error("pinning to CPU 1<<20 did not fail")
	}
}

// TestOnPinnedThread checks that onPinnedThread runs f on a thread bound
// to the one CPU (or, unpinned, with the process's affinity), and not at
// all when the thread cannot be pinned; and that BusyPlacement names the
// CPUs Run pins to.
func TestOnPinnedThread(t *testing.T) {
	cpu, busy, ok := cpuPair()
	if !ok {
		t.Skip("fewer than two CPUs allowed")
	}
	var proc unix.CPUSet
	if err := unix.SchedGetaffinity(0, &proc); err != nil {
		t.Fatal(err)
	}
	for _, pin := range []bool{true, false} {
		var in unix.CPUSet
		ran := false
		err := onPinnedThread(cpu, pin, func() {
			ran = true
			if err := unix.SchedGetaffinity(0, &in); err != nil {
				t.Error(err)
			}
		})
		if err != nil || !ran {
			t.Fatalf("pin %v: ran %v, %v", pin, ran, err)
		}
		if pin && (in.Count() != 1 || !in.IsSet(cpu)) {
			t.Errorf("pinned to CPU %d, the thread's affinity has %d CPUs", cpu, in.Count())
		}
		if !pin && in != proc {
			t.Errorf("unpinned, the thread's affinity has %d CPUs, the process's %d", in.Count(), proc.Count())
		}
	}
	ran := false
	if err := onPinnedThread(1<<20, true, func() { ran = true }); err == nil || ran {
		t.Errorf("CPU 1<<20: ran %v, error %v", ran, err)
	}
	want := fmt.Sprintf("the process pinned to CPU %d, the runs' thread to CPU %d", busy, cpu)
	if got := BusyPlacement(); got != want {
		t.Errorf("BusyPlacement() = %q, want %q", got, want)
	}
}
