package mask_test

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

var (
	fingerprintDir = flag.String("fingerprints", "", "TestFingerprints: compile every *.gbnf under this folder (e.g. schemabench -dump's) on Llama-3")
	fingerprintOut = flag.String("fingerprints-out", "", "TestFingerprints: write one line per grammar (path, fingerprint or error, compile µs, of which lowering and automaton µs) here")
	fingerprintMod = flag.Int("fingerprints-every", 1, "TestFingerprints: only every Nth grammar")
)

// TestFingerprints writes the automaton fingerprint (see
// Compiled.Fingerprint) of every grammar of a folder, to compare two
// versions of the automaton construction on a whole corpus: diff the
// first two columns of both outputs (the third is the compile time, the
// fourth its part before the eager walks). Off unless -fingerprints is
// given:
//
//	go run ./jsonschema2gbnf/cmd/schemabench -instances=false -dump /tmp/d
//	go test ./mask -run TestFingerprints -fingerprints /tmp/d -fingerprints-out /tmp/fp.txt
func TestFingerprints(t *testing.T) {
	if *fingerprintDir == "" {
		t.Skip("no -fingerprints folder")
	}
	defer mask.VerifyMinimize(false)()
	_, v := loadBench(t)
	var paths []string
	err := filepath.WalkDir(*fingerprintDir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".gbnf") {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, p := range paths {
		if i%*fingerprintMod != 0 {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(*fingerprintDir, p)
		g, err := gbnf.Parse(string(src))
		if err != nil {
			fmt.Fprintf(&b, "%s\tparse error\t0\n", rel)
			continue
		}
		start := time.Now()
		c, err := mask.Compile(g, v)
		us := time.Since(start).Microseconds()
		if err != nil {
			fmt.Fprintf(&b, "%s\terror: %v\t%d\n", rel, err, us)
			continue
		}
		st := c.Stats()
		fmt.Fprintf(&b, "%s\t%s\t%d\t%d\n", rel, c.Fingerprint(), us, (st.Duration - st.WalkDuration).Microseconds())
	}
	if *fingerprintOut != "" {
		if err := os.WriteFile(*fingerprintOut, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var buildGrammars = flag.String("build-grammars", "", "BenchmarkBuildAutomaton: comma-separated GBNF files")

// BenchmarkBuildAutomaton times lowering and automaton construction (no
// eager walks) of the grammar files given by -build-grammars, e.g. the
// slowest of the JSONSchemaBench corpus dumped by schemabench -dump.
func BenchmarkBuildAutomaton(b *testing.B) {
	if *buildGrammars == "" {
		b.Skip("no -build-grammars")
	}
	defer mask.VerifyMinimize(false)()
	_, v := loadBench(b)
	for _, p := range strings.Split(*buildGrammars, ",") {
		src, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		g, err := gbnf.Parse(string(src))
		if err != nil {
			b.Fatal(err)
		}
		n, un, err := mask.BuildAutomaton(g, v)
		b.Logf("%s: %d states, %d before minimization, %v", p, n, un, err)
		b.Run(filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := mask.BuildAutomaton(g, v); err != nil && !strings.Contains(err.Error(), "MaxStates") {
					b.Fatal(err)
				}
			}
		})
	}
}
