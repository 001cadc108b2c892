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
package gcfloor

import (
	"fmt"
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

var (
	mu    sync.Mutex
	floor int64 // bytes; 0: none
	base  int64 // GOGC when the floor was first set (the percentage it never goes below)
	armed bool  // a sentinel is waiting for the next collection
)

// Set makes the floor n bytes (0: none, GOGC as it was), replacing any
// earlier one; an error for n outside 0..MaxFloor.
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
	adjust()
	if n > 0 && !armed {
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
		if floor == 0 {
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

// adjust sets GOGC to max(base, 100·floor/live), live counted as at least
// runtimeMinHeap; base with no floor. Called with mu held.
func adjust() {
	pct := base
	if live := max(readInt("/gc/heap/live:bytes"), runtimeMinHeap); floor > 0 && floor*100/live > pct {
		pct = floor * 100 / live
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
