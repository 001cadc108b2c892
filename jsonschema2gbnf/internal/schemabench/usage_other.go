//go:build !unix

package schemabench

import "time"

// procUsage reports nothing where getrusage is missing: the columns read
// zero.
func procUsage() (sys time.Duration, minflt int64) { return 0, 0 }
