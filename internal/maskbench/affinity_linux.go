package maskbench

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// cpuPair returns two CPUs this process may run on (the first two of its
// affinity mask): one for the probe's thread, one for the busy process.
func cpuPair() (probe, busy int, ok bool) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, 0, false
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < 2; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return 0, 0, false
	}
	return cpus[0], cpus[1], true
}

// pinThread binds the calling OS thread (the caller holds
// runtime.LockOSThread) to cpu; restore gives it back its earlier
// affinity, before the thread goes back to the runtime's pool.
func pinThread(cpu int) (restore func() error, err error) {
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("affinity: %w", err)
	}
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return nil, fmt.Errorf("pin thread to CPU %d: %w", cpu, err)
	}
	return func() error { return unix.SchedSetaffinity(0, &old) }, nil
}

// pinProcess binds process pid to cpu.
func pinProcess(pid, cpu int) error {
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &one); err != nil {
		return fmt.Errorf("pin process %d to CPU %d: %w", pid, cpu, err)
	}
	return nil
}
