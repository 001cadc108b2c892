package mask_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

func TestDbgSlow(t *testing.T) {
	src, err := os.ReadFile(os.Getenv("GBNF"))
	if err != nil {
		t.Skip()
	}
	_, v := loadBench(t)
	mask.PrepareVocab(v)
	g, err := gbnf.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	mask.SetDebugPwalk(true)
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	t0 := time.Now()
	var c *mask.Compiled
	for range 3 {
		c, err = mask.Compile(g, v)
		if err != nil {
			t.Fatal(err)
		}
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / 3
	for _, x := range c.BigStates(40000) {
		t.Log(x)
	}
	t.Logf("compile wall %v cpu %v %+v", time.Since(t0)/3, cpu, c.Stats())
}

func BenchmarkFullWalk(b *testing.B) {
	_, v := loadBench(b)
	mask.PrepareVocab(v)
	g, _ := gbnf.Parse(`root ::= "\"" [^"\\]* "\""`)
	best := time.Hour
	for b.Loop() {
		t0 := time.Now()
		if _, err := mask.Compile(g, v); err != nil {
			b.Fatal(err)
		}
		best = min(best, time.Since(t0))
	}
	b.ReportMetric(float64(best.Microseconds()), "min-us")
}
