package maskbench

import (
	"bytes"
	"strings"
	"testing"

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
		if strings.Count(b.String(), r.Case) != 2 {
			t.Errorf("the tables do not both list %s", r.Case)
		}
		if len(r.ColdRuns) != 2 || r.EagerStates == 0 || r.EagerWork == 0 {
			t.Errorf("%s: %d cold runs, %d states precomputed with %d units", r.Case, len(r.ColdRuns), r.EagerStates, r.EagerWork)
		}
	}
	t.Log("\n" + b.String())
}
