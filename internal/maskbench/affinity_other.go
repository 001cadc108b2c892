//go:build !linux

package maskbench

import "errors"

var errNoAffinity = errors.New("CPU affinity is not available here")

// cpuPair: no affinity here, so no pinned pair.
func cpuPair() (probe, busy int, ok bool) { return 0, 0, false }

func pinThread(cpu int) (restore func() error, err error) { return nil, errNoAffinity }

func pinProcess(pid, cpu int) error { return errNoAffinity }
