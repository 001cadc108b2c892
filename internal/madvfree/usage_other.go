//go:build !unix

package madvfree

import "time"

// ProcUsage reports nothing where getrusage is missing.
func ProcUsage() (sys time.Duration, minflt int64) { return 0, 0 }
