package schemabench

import (
	"testing"
	"time"
)

// TestSlowestFloorStep checks that the machine floor runs at least as
// many steps as asked and for at least as long in all, and that its
// slowest step is one of them.
func TestSlowestFloorStep(t *testing.T) {
	for _, tc := range []struct {
		n     int
		total time.Duration
	}{
		{0, 0},
		{10, 0},
		{10, 2 * time.Millisecond},
		{200, 100 * time.Microsecond},
	} {
		slowest, ran, timed := slowestFloorStep(tc.n, tc.total)
		if ran < tc.n || timed < tc.total {
			t.Errorf("slowestFloorStep(%d, %v): %d steps, %v in all", tc.n, tc.total, ran, timed)
		}
		if tc.total == 0 && ran != tc.n {
			t.Errorf("slowestFloorStep(%d, 0): %d steps, want exactly %d", tc.n, ran, tc.n)
		}
		if (ran > 0) != (slowest > 0) || slowest > timed {
			t.Errorf("slowestFloorStep(%d, %v): slowest %v of %d steps, %v in all", tc.n, tc.total, slowest, ran, timed)
		}
	}
}
