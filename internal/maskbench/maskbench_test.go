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
	prep, rs, _, err := Run(dir, Options{Compiles: 1, Passes: 2, Runs: 2})
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

// TestProbeStalls checks the probe's counts are consistent (it cannot
// check the machine's stalls themselves).
func TestProbeStalls(t *testing.T) {
	s := ProbeStalls(20*time.Millisecond, 250*time.Microsecond)
	if s.Duration < 20*time.Millisecond || s.Reads < 100 || s.Count < 0 || s.OnCPU > s.Count || s.Count > 0 && s.Max <= s.Over {
		t.Errorf("inconsistent probe: %+v", s)
	}
	var b bytes.Buffer
	WriteStalls(&b, &s, true)
	if !strings.Contains(b.String(), "beside the busy process") || !strings.Contains(b.String(), "per second") {
		t.Errorf("report: %s", b.String())
	}
}
