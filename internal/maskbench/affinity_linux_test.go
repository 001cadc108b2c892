package maskbench

import (
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
