package maskbench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
)

// TestRun runs every case once (one compile, two passes) and checks that
// each document goes through and the table mentions every case.
func TestRun(t *testing.T) {
	dir := sharedtest.Dir(t)
	prep, rs, err := Run(dir, Options{Compiles: 1, Passes: 2})
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
		if !strings.Contains(b.String(), r.Case) {
			t.Errorf("table misses %s", r.Case)
		}
	}
	t.Log("\n" + b.String())
}
