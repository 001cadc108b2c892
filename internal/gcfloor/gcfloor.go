// Package gcfloor puts a floor under the garbage collector's headroom:
// the heap may grow by at least n bytes past what was live after the
// last collection before the next one starts, where GOGC alone lets it
// grow by GOGC% of the live heap. A process whose live heap is small (a
// server with a few cached grammars, the mask bench: 17-40 MB) otherwise
// collects every few dozen megabytes, and a compilation, which
// allocates 6 MB per corpus schema on the compile band, runs through
// several collections. With the floor it runs through few, each marking
// the same live objects; a live heap larger than n·100/GOGC is paced by
// GOGC as before.
//
// It sets GOGC (debug.SetGCPercent) to max(GOGC, 100·n/live) when the
// floor is set and again after each collection, from a finalizer the
// collector runs once per cycle; while a floor is set it owns GOGC. Go
// has no setting for a minimum heap (golang/go#23044 and #44309, on hold
// or declined), and the usual substitute, a ballast the collector counts
// as live, adds its size to the heap's peak however large the live heap
// is (the twelve slowest corpus compiles, on a fresh process with 512
// MiB touched, took 27,000-33,000 page faults with a 256 MiB ballast,
// 600 without) and counts toward GOMEMLIMIT. The memory limit still
// applies here: near it the runtime collects early, whatever GOGC says.
// With GOGC=off Set does nothing.
//
// What it buys, measured on a 2-core VM (README, stop 50): the compile
// band's convert+parse+compile 12-14% faster, the twelve slowest corpus
// compiles 16%, and no collection during the bench's cold passes. What
// it costs: the heap peaks at live + max(live, n) instead of 2·live,
// which madvfree.DefaultPretouch covers (no page faults).
//
// The floor's reserve keeps the pages that growth takes. Go's background
// scavenger gives free heap pages back to the system down to about 10%
// over what the heap had in use at the last collection (the runtime's
// retainExtraPercent), whatever the heap goal: a process with a small
// live heap gives back nearly everything a compilation used, within
// seconds, and the next large one takes those pages again. On the
// project's VMs that is as slow as it gets: writing 130 MB of pages
// given back with MADV_FREE took 200-260 ms (3 page faults, the rest
// user time), against 8-10 ms for pages the heap had kept, and with
// MADV_DONTNEED 515 ms. Github_ultra/o48661's compile took 370-440 ms
// in a run over the corpus (113 MB of its 130 from given-back pages),
// 190-200 ms alone. Go has no setting for the scavenger's goal, so Set
// makes the runtime count more heap in use: on Linux, without a memory
// limit (GOMEMLIMIT counts it), the first Set with a floor allocates a
// reserve of reservePercent times the floor (2.5 GiB for the default)
// that is never written (in pieces, any piece Go cleared given back at
// once: it costs address space, no resident memory; TestReserve), takes
// it out of the live heap in the percentage above, and so keeps about
// the floor's worth of free pages mapped. With it o48661's compile
// took 183 ms in that run. The runtime's heap statistics (and serve's
// /metrics go_memstats_*) include the reserve (Reserve says how much).
package gcfloor

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultFloor is the floor structgen serve, structgen bench and
// schemabench set: 256 MiB, the grammar cache's default size. The heap
// then peaks at live + max(live, 256 MiB), which madvfree.DefaultPretouch
// covers (512 MiB) for live heaps up to 256 MiB — the corpus's largest
// compile's is about 200 MB — so the growth takes no page faults.
const DefaultFloor = 256 << 20

// MaxFloor bounds Set's size: 1 GiB, as madvfree.MaxPretouch. The heap
// grows by as much before collecting, which is memory the machine must
// have; a larger size is more likely a mistyped flag than a plan. (It
// also fits a 32-bit int.)
const MaxFloor = 1 << 30

// reservePercent is the reserve's size in percent of the floor: the
// scavenger keeps free pages up to 10% of the heap in use (the runtime's
// retainExtraPercent, Go 1.19-1.26), so ten times the floor keeps about
// the floor's worth.
const reservePercent = 1000

var (
	mu      sync.Mutex
	floor   int64    // bytes; 0: none
	base    int64    // GOGC when the floor was first set (the percentage it never goes below)
	armed   bool     // a sentinel is waiting for the next collection
	reserve [][]byte // never written (see the package comment), in reserveChunk pieces; nil: none
)

// reserveChunk is the size of the reserve's pieces. Go clears a new large
// object whose pages the heap used before (all of it, if any page was):
// in pieces, only those that fill such gaps are written, and
// dropPages gives their pages back.
const reserveChunk = 4 << 20

// Set makes the floor n bytes (0: none, GOGC as it was, or with a
// reserve made by an earlier floor the percentage that leaves it out),
// replacing any earlier one; an error for n outside 0..MaxFloor.
func Set(n int) error {
	if n < 0 || n > MaxFloor {
		return fmt.Errorf("GC floor %d: want 0..%d bytes", n, MaxFloor)
	}
	mu.Lock()
	defer mu.Unlock()
	if floor == 0 && n > 0 {
		base = readInt("/gc/gogc:percent")
	}
	if base <= 0 {
		return nil // GOGC=off (or never set and n is 0): no floor, Floor() 0
	}
	floor = int64(n)
	if size := int64(n) * reservePercent / 100; n > 0 && reserve == nil && reserveAllowed(size) && debug.SetMemoryLimit(-1) == math.MaxInt64 {
		// (Once per process, from the first floor: a reserve dropped and
		// made again would take pages the heap had written.)
		for range (size + reserveChunk - 1) / reserveChunk {
			b := make([]byte, reserveChunk)
			dropPages(b)
			reserve = append(reserve, b)
		}
		runtime.GC() // (so that the live heap adjust reads includes it)
	}
	adjust()
	if (n > 0 || reserve != nil) && !armed {
		armed = true
		arm()
	}
	return nil
}

// Floor returns the floor in bytes (0: none, or GOGC=off).
func Floor() int {
	mu.Lock()
	defer mu.Unlock()
	return int(floor)
}

// Reserve returns the size of the floor's reserve in bytes (0: none; see
// the package comment): heap the runtime counts in use, never written.
func Reserve() int {
	mu.Lock()
	defer mu.Unlock()
	return int(reservedBytes())
}

// reservedBytes is the reserve's size. Called with mu held.
func reservedBytes() int64 { return int64(len(reserve)) * reserveChunk }

// sentinel is an object only a finalizer refers to: the collector finds
// it unreachable once per cycle. (Large enough not to share a tiny
// allocation block, whose finalizers may never run.)
type sentinel struct{ _ [64]byte }

// arm leaves a sentinel whose finalizer, run after the next collection,
// adjusts GOGC and leaves the next one, while there is a floor.
func arm() {
	runtime.SetFinalizer(new(sentinel), func(*sentinel) {
		mu.Lock()
		defer mu.Unlock()
		if floor == 0 && reserve == nil {
			armed = false
			return
		}
		adjust()
		arm()
	})
}

// runtimeMinHeap is the runtime's minimum heap goal at GOGC=100 (4 MiB,
// heapMinimum): it scales with GOGC, so a percentage computed from a
// live heap below it would set a goal far past live + floor (a floor of
// 64 MiB over 126 KB live: 2.2 GB). adjust divides by at least this.
const runtimeMinHeap = 4 << 20

// adjust sets GOGC so that the heap goal is live + max(base% of live,
// floor), the live heap less the reserve, counted as at least
// runtimeMinHeap: max(base, 100·floor/live) without a reserve; base
// with neither. Called with mu held.
func adjust() {
	pct := base
	if live := max(readInt("/gc/heap/live:bytes"), runtimeMinHeap); floor > 0 || reserve != nil {
		own := max(live-reservedBytes(), runtimeMinHeap)
		head := max(own*base/100, floor)
		pct = (head*100 + live - 1) / live // (rounded up: a percentage of gigabytes)
	}
	debug.SetGCPercent(int(pct))
}

// readInt reads one runtime metric as an int64 (0 where unknown).
func readInt(name string) int64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}
