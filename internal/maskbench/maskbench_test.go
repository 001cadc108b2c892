package maskbench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/internal/sharedtest"
)

// TestRun runs every case (one compile, two passes, and a second cold run
// on a fresh compilation) and checks that each document goes through and
// the tables mention every case.
func TestRun(t *testing.T) {
	dir := sharedtest.Dir(t)
	prep, rs, err := Run(dir, Options{Compiles: 1, Passes: 2, Runs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 5 {
		t.Fatalf("%d results, want 5", len(rs))
	}
	var b bytes.Buffer
	WriteTable(&b, prep, rs, "")
	for _, r := range rs {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Case, r.Err)
		}
		if strings.Count(b.String(), "| "+r.Case+" | ") < 2 {
			t.Errorf("the tables do not both list %s", r.Case)
		}
		if len(r.ColdRuns()) != 2 || r.EagerStates == 0 || r.EagerWork == 0 {
			t.Errorf("%s: %d cold runs, %d states precomputed with %d units", r.Case, len(r.ColdRuns()), r.EagerStates, r.EagerWork)
		}
	}
	t.Log("\n" + b.String())
}

// TestSlowSteps checks that a step over the target is listed with the
// median of the same step over the runs, and nothing else is.
func TestSlowSteps(t *testing.T) {
	us := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Microsecond)
		}
		return out
	}
	r := &Result{Case: "c", ColdSteps: [][]time.Duration{
		us(3, 900, 4),
		us(3, 5, 4, 7), // a longer pass: step 3 has one run
		us(2, 6, 300),
	}}
	got := r.SlowSteps()
	want := []SlowStep{
		{Run: 1, Step: 1, Wall: 900 * time.Microsecond, Median: 6 * time.Microsecond},
		{Run: 3, Step: 2, Wall: 300 * time.Microsecond, Median: 4 * time.Microsecond},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("slow step %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	var b bytes.Buffer
	writeSlowSteps(&b, []*Result{r})
	if !strings.Contains(b.String(), "| c | 1 | 1 | 900 | 6.0 |") || !strings.Contains(b.String(), "the largest: 6.0 µs") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	writeSlowSteps(&b, []*Result{{Case: "d", ColdSteps: [][]time.Duration{us(1, 2)}}})
	if b.Len() != 0 {
		t.Errorf("no slow step, but:\n%s", b.String())
	}
}

// TestProbeStalls checks the probes' counts are consistent (it cannot
// check the machine's stalls themselves), and that the paired probe pins
// its loop and the busy process to two CPUs where it can.
func TestProbeStalls(t *testing.T) {
	s := ProbeStalls(20*time.Millisecond, 250*time.Microsecond)
	consistent(t, "ProbeStalls", s)
	r, err := ProbeMachine(20*time.Millisecond, 250*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	consistent(t, "idle", r.Idle)
	consistent(t, "beside", r.Beside)
	if _, _, two := cpuPair(); two != r.Pinned || r.Pinned && r.ProbeCPU == r.BusyCPU {
		t.Errorf("pinned %v to CPUs %d and %d, cpuPair says two CPUs: %v", r.Pinned, r.ProbeCPU, r.BusyCPU, two)
	}
}

func consistent(t *testing.T, name string, s Stalls) {
	t.Helper()
	if s.Duration < 20*time.Millisecond || s.Reads < 100 || s.Count < 0 || s.OnCPU > s.Count || s.Count > 0 && s.Max <= s.Over {
		t.Errorf("%s: inconsistent probe: %+v", name, s)
	}
}

// TestWriteStalls checks the report and its verdict on whether work on
// another CPU holds the probe's CPU up.
func TestWriteStalls(t *testing.T) {
	probe := func(n, on int) Stalls {
		return Stalls{Duration: 5 * time.Second, Reads: 1e7, Over: 250 * time.Microsecond, Count: n, OnCPU: on, Max: time.Millisecond}
	}
	for _, c := range []struct {
		name          string
		idle, beside  Stalls
		pinned        bool
		coupled       bool
		want, notWant []string
	}{
		{"coupled", probe(2, 1), probe(36, 30), true, true, []string{"its thread pinned to CPU 0", "beside a busy process pinned to CPU 1,", "2 times (0.40 a second, the longest 1000 µs, 1 on CPU)", "36 times (7.20 a second", "not independent"}, nil},
		{"off CPU", probe(2, 1), probe(36, 3), true, false, nil, []string{"not independent"}},
		{"few", probe(0, 0), probe(4, 4), true, false, []string{"0 times (0.00 a second)"}, []string{"not independent"}},
		{"from none", probe(3, 0), probe(5, 5), true, true, []string{"not independent"}, nil},
		{"below the ratio", probe(9, 4), probe(11, 11), true, false, nil, []string{"not independent"}},
		{"unpinned", probe(1, 0), probe(20, 10), false, true, []string{"not pinned", "beside a busy process, was", "not independent"}, []string{"CPU 0"}},
		{"no CPU time", probe(2, -1), probe(12, -1), true, true, []string{"not independent"}, []string{"on CPU"}},
		{"no CPU time, few", probe(2, -1), probe(4, -1), true, false, nil, []string{"not independent"}},
	} {
		r := StallReport{Idle: c.idle, Beside: c.beside, Pinned: c.pinned, ProbeCPU: 0, BusyCPU: 1}
		if r.Coupled() != c.coupled {
			t.Errorf("%s: Coupled() = %v", c.name, r.Coupled())
		}
		var b bytes.Buffer
		WriteStalls(&b, &r)
		for _, w := range c.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in:\n%s", c.name, w, b.String())
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: %q in:\n%s", c.name, w, b.String())
			}
		}
	}
}
