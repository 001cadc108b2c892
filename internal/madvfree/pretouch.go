package madvfree

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

// DefaultPretouch is how much heap structgen serve, structgen bench and
// schemabench touch at start (Pretouch): 512 MiB. With the GC floor all
// three set (gcfloor.DefaultFloor, 256 MiB) the heap peaks at its live
// size plus the larger of that and the floor, and the live heap of the
// JSONSchemaBench sample's largest compile (Github_ultra/o48661) is
// about 200 MB: 456 MB. (256 MiB covered the heap's peak of about 190
// MB without a floor, until stop 50.)
const DefaultPretouch = 512 << 20

// MaxPretouch bounds Pretouch's size: 1 GiB, five times the largest heap
// the corpus's compilations reach and four times the grammar cache's
// default; a larger size is more likely a mistyped flag than a plan, and
// the allocation would take the machine's memory before anything could
// report it. (It also fits a 32-bit int.)
const MaxPretouch = 1 << 30

// A PretouchResult is what Pretouch did.
type PretouchResult struct {
	Bytes  int           // touched (0: nothing done)
	Faults int64         // minor page faults taken (what later growth is spared)
	Took   time.Duration // including the collection after
}

// String says what was done, e.g. "256 MiB, 65600 faults, 771ms", or
// "nothing touched".
func (r PretouchResult) String() string {
	if r.Bytes == 0 {
		return "nothing touched"
	}
	return fmt.Sprintf("%d MiB, %d faults, %v", r.Bytes>>20, r.Faults, r.Took.Round(time.Millisecond))
}

// Pretouch touches n bytes of fresh heap, drops them and collects, so
// that the heap's later growth up to about that size reuses pages the
// process already holds instead of faulting each one in: what the JVM's
// AlwaysPreTouch does for its heap. Without it, the first compilation
// that takes the heap past its earlier peak pays a fault per 4 KB page
// (Github_ultra/o48661, the largest grammar of the JSONSchemaBench
// sample: 16,000 faults, 100 ms of its 500 in the kernel).
//
// The pages stay with the process only where free heap goes back
// lazily (Mode() == "MADV_FREE", see Reexec): the scavenger then gives
// them back with MADV_FREE and the kernel takes them only when it needs
// the memory. With Go's default (MADV_DONTNEED) the scavenger would
// unmap them again, so Pretouch does nothing there, nor for n <= 0. The
// price: the resident size reported includes the n bytes until the
// kernel reclaims them. 256 MiB take 0.8–1.1 s on the machines this
// project is measured on (a fault per page); the server runs it while
// the model loads.
//
// It fails only for n above MaxPretouch.
func Pretouch(n int) (PretouchResult, error) {
	if n > MaxPretouch {
		return PretouchResult{}, fmt.Errorf("pretouch: %d bytes is more than MaxPretouch (%d)", n, MaxPretouch)
	}
	if n <= 0 || Mode() != "MADV_FREE" {
		return PretouchResult{}, nil
	}
	t0 := time.Now()
	_, f0 := ProcUsage()
	b := make([]byte, n)
	page := os.Getpagesize()
	for i := 0; i < len(b); i += page {
		b[i] = 1
	}
	pretouchSink = b[len(b)-1]
	b = nil
	runtime.GC()
	_, f1 := ProcUsage()
	return PretouchResult{Bytes: n, Faults: f1 - f0, Took: time.Since(t0)}, nil
}

// pretouchSink keeps the touches from being optimized away.
var pretouchSink byte
