//go:build unix

package madvfree

import (
	"syscall"
	"time"
)

// ProcUsage returns the process's system CPU time and minor page faults
// so far (all its threads: the collector's workers too).
func ProcUsage() (sys time.Duration, minflt int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Stime.Nano()), int64(ru.Minflt)
}
