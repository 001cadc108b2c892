package maskbench

import (
	"runtime"
	"slices"
	"time"
)

// Stalls is what ProbeStalls measured.
type Stalls struct {
	Duration time.Duration // how long the loop ran
	Reads    int64         // clock reads (loop iterations)
	Over     time.Duration // the threshold
	Count    int           // gaps between two consecutive reads longer than Over
	// OnCPU counts those gaps during which the thread's CPU time advanced
	// by at least half the gap: the guest did not preempt it, so the time
	// went to the hypervisor or host (a virtual CPU not running), or to
	// the kernel on the thread's behalf. -1 where thread CPU time is not
	// available (not Linux).
	OnCPU int
	Max   time.Duration // the longest gap
}

// ProbeStalls measures how often this machine holds up a thread that
// does nothing but read the clock: for d, on one locked OS thread, it
// reads the monotonic clock (and, on Linux, the thread's CPU time) in a
// loop and counts the gaps between consecutive reads longer than over.
// Each iteration takes well under a microsecond, so any such gap is time
// the thread did not get — what a timed mask step of this process can
// meet just as well, whatever it computes.
func ProbeStalls(d, over time.Duration) Stalls {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := Stalls{Over: over, OnCPU: -1}
	cpu, haveCPU := threadCPU()
	if haveCPU {
		s.OnCPU = 0
	}
	start := time.Now()
	prev := time.Duration(0)
	for {
		now := time.Since(start)
		c, _ := threadCPU()
		s.Reads++
		if gap := now - prev; gap > over {
			s.Count++
			s.Max = max(s.Max, gap)
			if haveCPU && c-cpu >= gap/2 {
				s.OnCPU++
			}
		}
		prev, cpu = now, c
		if now >= d {
			s.Duration = now
			return s
		}
	}
}

// SlowStep is a cold step over TargetColdMax.
type SlowStep struct {
	Run, Step int
	Wall      time.Duration
	// Median is the median of the same step over all the runs: the same
	// work (see Result.ColdSteps), so a slow step whose median is fast
	// was held up, not busy.
	Median time.Duration
}

// SlowSteps returns the cold steps of r's runs over TargetColdMax, each
// with the median of that step over the runs.
func (r *Result) SlowSteps() []SlowStep {
	var out []SlowStep
	var col []time.Duration
	for run, steps := range r.ColdSteps {
		for i, d := range steps {
			if d <= TargetColdMax*time.Microsecond {
				continue
			}
			col = col[:0]
			for _, other := range r.ColdSteps {
				if i < len(other) {
					col = append(col, other[i])
				}
			}
			slices.Sort(col)
			out = append(out, SlowStep{Run: run + 1, Step: i, Wall: d, Median: col[len(col)/2]})
		}
	}
	return out
}
