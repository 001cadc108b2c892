package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/structgen/structgen/internal/gcfloor"
	"github.com/structgen/structgen/internal/madvfree"
	"github.com/structgen/structgen/internal/maskbench"
	"github.com/structgen/structgen/internal/sharedtest"
)

// benchPeer returns llama.cpp's grammar engine as the benchmark's peer;
// nil in builds without llama.cpp (llama.go registers it).
var benchPeer func() maskbench.Peer

type benchCmd struct {
	Cases      []string      `help:"Case ids or prefixes (e.g. 02,03); default all." placeholder:"ID"`
	Compiles   int           `help:"Compile runs per case (median reported)." default:"5"`
	Passes     int           `help:"Passes over each document (the first is cold)." default:"5"`
	Peer       bool          `help:"Also run llama.cpp's grammar engine on the same grammar and tokens (llama.cpp builds)."`
	PeerSteps  int           `help:"At most this many peer mask steps per case." default:"100"`
	Runs       int           `help:"Cold passes on fresh compilations per case (the spread over the runs is checked against the targets)." default:"1"`
	Busy       bool          `help:"Keep a CPU-bound process (sh -c 'while :; do :; done') running during the runs, pinned to another CPU than theirs where the system allows."`
	Pretouch   int           `help:"Bytes of heap to touch before the runs, as serve does at start, so that the cold passes' heap growth takes no page faults (Linux, free memory given back with MADV_FREE; 0: off)." default:"536870912" placeholder:"BYTES"`
	GCFloor    int           `name:"gc-floor" help:"Bytes the heap may grow by past its live size before the garbage collector runs, at least, as serve sets (0: GOGC alone)." default:"268435456" placeholder:"BYTES"`
	StallProbe time.Duration `help:"Before the runs, measure for this long how often the machine holds up a thread that only reads the clock for more than 250 µs, with the other CPUs idle, then as long again beside a busy process on another CPU (pinned where the system allows), e.g. 5s." placeholder:"DURATION"`
	Shared     string        `help:"The shared folder holding bench/ and corpus/ (default: ../shared beside the repository, or $STRUCTGEN_SHARED)." placeholder:"DIR"`
	Verbose    bool          `short:"v" help:"Log progress to stderr."`
}

func (c *benchCmd) Run(e *env) error {
	if c.Compiles < 1 || c.Passes < 1 || c.PeerSteps < 1 || c.Runs < 1 {
		return usagef("--compiles, --passes, --peer-steps and --runs must be at least 1")
	}
	if c.StallProbe < 0 {
		return usagef("--stall-probe must not be negative")
	}
	if err := heapFlags(c.Pretouch, c.GCFloor); err != nil {
		return err
	}
	opt := maskbench.Options{Compiles: c.Compiles, Passes: c.Passes, PeerSteps: c.PeerSteps, Runs: c.Runs, Busy: c.Busy}
	for _, s := range c.Cases {
		opt.Cases = append(opt.Cases, strings.Split(s, ",")...)
	}
	if c.Peer {
		if benchPeer == nil {
			return usagef("--peer needs llama.cpp support, which this binary was built without: build it with 'make build'")
		}
		opt.Peer = benchPeer()
	}
	if c.Verbose {
		opt.Log = e.stderr
	}
	dir := c.Shared
	if dir == "" {
		d, why := sharedtest.Find()
		if d == "" {
			return fmt.Errorf("bench: %s (give --shared DIR)", why)
		}
		dir = d
	}
	// First, while the process has nothing else to do: with the
	// collector working through the vocabulary's garbage on another CPU
	// the "idle" probe would not be.
	var stalls *maskbench.StallReport
	if c.StallProbe > 0 {
		if c.Verbose {
			fmt.Fprintf(e.stderr, "stall probe: %v with the other CPUs idle, %v beside a busy process\n", c.StallProbe, c.StallProbe)
		}
		r, err := maskbench.ProbeMachine(c.StallProbe, maskbench.TargetColdMax*time.Microsecond)
		if err != nil {
			return fmt.Errorf("bench: stall probe: %w", err)
		}
		stalls = &r
	}
	// Before the vocabulary and the runs, as serve does while its model
	// loads: without it a cold pass on a fresh compilation takes page
	// faults where the heap grows (up to 32 a pass; the worst run's p99
	// of 02 and 04 per round 25-41 µs instead of 6-24, README stop 49).
	pt, err := madvfree.Pretouch(c.Pretouch)
	if err != nil {
		return err
	}
	prep, rs, err := maskbench.Run(dir, opt)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if len(rs) == 0 {
		return usagef("bench: no case matches %v", opt.Cases)
	}
	peerName := ""
	if opt.Peer != nil {
		peerName = opt.Peer.Name()
	}
	if pt.Bytes > 0 {
		fmt.Fprintf(e.stdout, "Heap pretouched before the runs, as serve does (--pretouch): %s.\n", pt)
	}
	if f := gcfloor.Floor(); f > 0 {
		fmt.Fprintf(e.stdout, "The heap grows by at least %d MiB past its live size before a collection, as serve sets (--gc-floor)", f>>20)
		if r := gcfloor.Reserve(); r > 0 {
			fmt.Fprintf(e.stdout, ", and keeps that much free heap from the scavenger (a reserve of %d MiB, never written)", r>>20)
		}
		fmt.Fprintln(e.stdout, ".")
	}
	if c.Busy {
		fmt.Fprintf(e.stdout, "A CPU-bound process ran beside the runs (--busy): %s.\n", maskbench.BusyPlacement())
	}
	maskbench.WriteTable(e.stdout, prep, rs, peerName)
	maskbench.WriteStalls(e.stdout, stalls)
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("bench: case %s: %w", r.Case, r.Err)
		}
	}
	return nil
}
