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

// cpuEvery is how often ProbeStalls reads the thread's CPU time. Not at
// every iteration: that read is a system call (1.5 µs on a Firecracker
// VM, against 0.07 µs for the monotonic clock through the vDSO), and a
// loop of system calls is held up differently from the computation of a
// mask step — on that VM 1 a second with or without a busy process on
// the other CPU, where a loop without them saw 0-0.4 a second with the
// other CPU idle and 3-7 beside the busy process.
const cpuEvery = 50 * time.Microsecond

// ProbeStalls measures how often this machine holds up a thread that
// does nothing but read the clock: for d, on one locked OS thread, it
// reads the monotonic clock in a loop and counts the gaps between
// consecutive reads longer than over. Each iteration takes well under a
// microsecond, so any such gap is time the thread did not get — what a
// timed mask step of this process can meet just as well, whatever it
// computes. On Linux it also reads the thread's CPU time every cpuEvery
// and at each gap, to tell a gap the thread spent on CPU (Stalls.OnCPU).
func ProbeStalls(d, over time.Duration) Stalls {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := Stalls{Over: over, OnCPU: -1}
	cpu, haveCPU := threadCPU()
	if haveCPU {
		s.OnCPU = 0
	}
	start := time.Now()
	prev, cpuAt := time.Duration(0), time.Duration(0)
	for {
		now := time.Since(start)
		s.Reads++
		gap := now - prev
		if gap > over {
			s.Count++
			s.Max = max(s.Max, gap)
		}
		if haveCPU && (gap > over || now-cpuAt >= cpuEvery) {
			c, _ := threadCPU()
			// the CPU time since the last read covers the gap and the
			// loop's running before it (now-cpuAt-gap, all on CPU)
			if gap > over && c-cpu-(now-cpuAt-gap) >= gap/2 {
				s.OnCPU++
			}
			cpu, cpuAt = c, now
		}
		prev = now
		if now >= d {
			s.Duration = now
			return s
		}
	}
}

// StallReport is what ProbeMachine measured: the loop of ProbeStalls
// with the other CPUs idle, then again beside a busy process on another
// CPU.
type StallReport struct {
	Idle, Beside Stalls
	// Pinned: the loop's thread ran on CPU ProbeCPU and the busy process
	// on CPU BusyCPU throughout, so the guest kernel never put both on one
	// CPU, and the second probe measures only what work on another CPU
	// does to this one. False where CPU affinity is not available (not
	// Linux) or only one CPU is allowed: both then ran where the kernel
	// put them.
	Pinned            bool
	ProbeCPU, BusyCPU int
}

// A busy process on another CPU counts as holding the probe's CPU up
// (StallReport.Coupled) when the loop beside it was held up at least
// CoupledMinStalls times and CoupledRatio times as often a second as
// with the other CPUs idle, counting only the stalls on CPU where the
// thread's CPU time is known (the guest's own preemptions are not the
// other CPU's doing). A handful either way is noise: on a 2-core
// Firecracker VM nine pairs of 5 s probes counted 0-3 stalls on CPU
// with the other CPU idle and 8-15 beside the busy process (1-7 and
// 8-20 counting all).
const (
	CoupledMinStalls = 5
	CoupledRatio     = 3
)

// Coupled reports whether work on another CPU held the probe's CPU up
// markedly more often than idle CPUs did. Such CPUs are not independent
// (virtual CPUs sharing physical ones): whatever runs beside the timed
// steps (the busy process, the collector after a compile) lengthens
// some of them, whatever they compute.
func (r StallReport) Coupled() bool {
	idle, beside := r.Idle.Count, r.Beside.Count
	if r.Idle.OnCPU >= 0 && r.Beside.OnCPU >= 0 {
		idle, beside = r.Idle.OnCPU, r.Beside.OnCPU
	}
	if beside < CoupledMinStalls || r.Beside.Duration <= 0 || r.Idle.Duration <= 0 {
		return false
	}
	return float64(beside)/r.Beside.Duration.Seconds() >= CoupledRatio*float64(idle)/r.Idle.Duration.Seconds()
}

// ProbeMachine runs ProbeStalls for d twice: with the other CPUs idle,
// then beside a CPU-bound process (busyLoop), the loop's thread and the
// process each pinned to a CPU of their own where the system allows it
// (StallReport.Pinned). It tells a machine whose CPUs hold each other up
// from one that stalls on its own.
func ProbeMachine(d, over time.Duration) (StallReport, error) {
	var r StallReport
	r.ProbeCPU, r.BusyCPU, r.Pinned = cpuPair()
	var err error
	if r.Idle, err = probePinned(d, over, r.ProbeCPU, r.Pinned); err != nil {
		return r, err
	}
	err = besideBusy(r.ProbeCPU, r.BusyCPU, r.Pinned, func() { r.Beside = ProbeStalls(d, over) })
	return r, err
}

// probePinned runs ProbeStalls on a goroutine of its own, its thread
// pinned to cpu if pin (onPinnedThread).
func probePinned(d, over time.Duration, cpu int, pin bool) (Stalls, error) {
	var s Stalls
	err := onPinnedThread(cpu, pin, func() { s = ProbeStalls(d, over) })
	return s, err
}

// besideBusy runs f beside a CPU-bound process (busyLoop): with pin, f's
// thread on CPU cpu and the process on CPU busy; else both where the
// kernel puts them.
func besideBusy(cpu, busy int, pin bool, f func()) error {
	if !pin {
		busy = -1
	}
	stop, err := busyLoop(busy)
	if err != nil {
		return err
	}
	defer stop()
	return onPinnedThread(cpu, pin, f)
}

// onPinnedThread runs f on a goroutine locked to its thread, the thread
// pinned to cpu if pin, and waits for it. Where the thread's earlier
// affinity cannot be given back, the goroutine ends still locked to the
// thread, and the runtime then ends the thread instead of reusing it
// pinned. f does not run if the thread cannot be pinned.
func onPinnedThread(cpu int, pin bool, f func()) error {
	done := make(chan error, 1)
	go func() {
		var err error
		defer func() { done <- err }()
		runtime.LockOSThread()
		restore := func() error { return nil }
		if pin {
			if restore, err = pinThread(cpu); err != nil {
				runtime.UnlockOSThread()
				return
			}
		}
		f()
		if err = restore(); err == nil {
			runtime.UnlockOSThread()
		} // (else still locked: the thread ends with the goroutine)
	}()
	return <-done
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
