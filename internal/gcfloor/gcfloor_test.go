package gcfloor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/internal/madvfree"
)

// gcOn skips a test that reads the collector's pacing where GOGC turns
// it off, and takes the floor away after it.
func gcOn(t *testing.T) {
	t.Helper()
	if readInt("/gc/gogc:percent") <= 0 {
		t.Skip("GOGC=off")
	}
	t.Cleanup(func() {
		if err := Set(0); err != nil {
			t.Error(err)
		}
	})
}

var sink [][]byte

// collections returns how many collections allocating mb megabytes of
// garbage in 64 KiB pieces takes.
func collections(mb int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < mb*16; i++ {
		sink = append(sink[:0], make([]byte, 64<<10))
	}
	sink = nil
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// TestSet checks that the floor raises the heap goal to the live heap
// plus the floor, that the heap then takes most of a floor's worth of
// garbage without collecting, and that Set(0) gives GOGC back.
func TestSet(t *testing.T) {
	gcOn(t)
	gogc := readInt("/gc/gogc:percent")
	const n = 64 << 20
	for _, tc := range []struct {
		floor        int
		minGC, maxGC uint32 // collections over 48 MB of garbage
	}{
		{n, 0, 1},
		{0, 2, 1 << 20},
		{n, 0, 1},
	} {
		runtime.GC()
		if err := Set(tc.floor); err != nil {
			t.Fatal(err)
		}
		if Floor() != tc.floor {
			t.Errorf("Floor() = %d after Set(%d)", Floor(), tc.floor)
		}
		// (The goal is over the live heap less the reserve, which stays
		// once made.)
		live, goal := readInt("/gc/heap/live:bytes"), readInt("/gc/heap/goal:bytes")
		own := live - int64(Reserve())
		want := live + max(own*gogc/100, int64(tc.floor))
		// (GOGC is a whole percentage of the live heap, reserve included:
		// up to 1% of it over.)
		if goal < want-(want-live)/10 || goal > want+(want-live)/10+live/100+4<<20 {
			t.Errorf("floor %d: heap goal %d with %d live (%d of it the reserve), want about %d", tc.floor, goal, live, Reserve(), want)
		}
		if tc.floor == 0 && Reserve() == 0 && readInt("/gc/gogc:percent") != gogc {
			t.Errorf("Set(0) left GOGC at %d, was %d", readInt("/gc/gogc:percent"), gogc)
		}
		// (Without a floor the count depends on timing as well: a
		// cycle's mark runs while the allocation goes on past the goal,
		// and on a loaded machine 48 MB over a 4 MB goal took 3 to 12;
		// the goal above is the exact check, this the coarse one.)
		if c := collections(48); c < tc.minGC || c > tc.maxGC {
			t.Errorf("floor %d: %d collections over 48 MB of garbage (heap goal %d, %d live), want %d..%d", tc.floor, c, goal, live, tc.minGC, tc.maxGC)
		}
	}
	for _, bad := range []int{-1, MaxFloor + 1} {
		if err := Set(bad); err == nil {
			t.Errorf("Set(%d): no error", bad)
		}
	}
}

// TestFollowsLive checks that the percentage follows the live heap from
// one collection to the next (the finalizer): with 96 MB more live than
// when the floor was set, the goal is about twice the live heap, not
// the live heap times the percentage a nearly empty heap needed.
func TestFollowsLive(t *testing.T) {
	gcOn(t)
	runtime.GC()
	if err := Set(64 << 20); err != nil {
		t.Fatal(err)
	}
	keep := make([]byte, 96<<20)
	runtime.GC()
	// (Live and goal less the reserve: the goal is over the rest.)
	r := int64(Reserve())
	var live, goal int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		runtime.GC() // (the finalizer of a cycle runs after it)
		live, goal = readInt("/gc/heap/live:bytes")-r, readInt("/gc/heap/goal:bytes")-r
		if goal <= 2*live+8<<20 {
			break
		}
	}
	runtime.KeepAlive(keep)
	if live < 96<<20 || goal > 2*live+8<<20 {
		t.Errorf("with %d live the heap goal is %d, want about %d (GOGC %d, reserve %d)", live, goal, 2*live, readInt("/gc/gogc:percent"), r)
	}
	debug.FreeOSMemory()
}

// TestReserve checks the floor's reserve: made by the first floor, ten
// times its size, never written (the process's resident memory stays far
// below it), and with it the scavenger keeps the free pages of a floor's
// worth of garbage: without it (checked by hand), it had given back all
// 50 MB of them within a second of the second collection.
func TestReserve(t *testing.T) {
	gcOn(t)
	if !reserveAllowed(640<<20) || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("no reserve here (not Linux, strict overcommit, an address-space limit or a memory limit)")
	}
	if err := Set(64 << 20); err != nil {
		t.Fatal(err)
	}
	if Reserve() < 640<<20 {
		t.Fatalf("reserve %d bytes for a floor of 64 MiB, want 640 MiB", Reserve())
	}
	if rss := resident(); rss <= 0 || rss > int64(Reserve())/2 {
		t.Errorf("resident %d bytes with a reserve of %d: the reserve was written (or /proc unreadable)", rss, Reserve())
	}
	// (Two collections: the scavenger's goal scales by the heap goal over
	// the last cycle's, which the floor just raised.)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	collections(48)
	runtime.GC()
	runtime.GC()
	time.Sleep(time.Second)
	runtime.ReadMemStats(&after)
	if d := int64(after.HeapReleased) - int64(before.HeapReleased); d > 16<<20 {
		t.Errorf("the scavenger gave back %d bytes of free heap (%d idle left) with a reserve of %d", d, after.HeapIdle-after.HeapReleased, Reserve())
	}
}

// TestPretouchCovers checks the two defaults agree: the heap touched at
// start covers the floor plus the live heap of the corpus's largest
// compile (about 200 MB), the peak with the floor.
func TestPretouchCovers(t *testing.T) {
	const corpusLive = 200 << 20
	if madvfree.DefaultPretouch < DefaultFloor+corpusLive {
		t.Errorf("DefaultPretouch %d < DefaultFloor %d + %d", madvfree.DefaultPretouch, DefaultFloor, corpusLive)
	}
}

// TestGOGCOff checks that with the collector off Set leaves it off and
// reports no floor, then gives GOGC back.
func TestGOGCOff(t *testing.T) {
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	if err := Set(64 << 20); err != nil {
		t.Fatal(err)
	}
	if Floor() != 0 || readInt("/gc/gogc:percent") != -1 {
		t.Errorf("GOGC=off: Set(64 MiB) gave floor %d, GOGC %d", Floor(), readInt("/gc/gogc:percent"))
	}
	if err := Set(0); err != nil {
		t.Fatal(err)
	}
}

// resident returns the process's resident memory in bytes, from
// /proc/self/status (0 if unreadable).
func resident() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
