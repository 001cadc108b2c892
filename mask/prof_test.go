package mask_test

import (
	"os"
	"runtime/pprof"
	"strconv"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

func TestProfCompile(t *testing.T) {
	if os.Getenv("PROF") == "" {
		t.Skip()
	}
	cases, v := loadBench(t)
	mask.PrepareVocab(v)
	i, _ := strconv.Atoi(os.Getenv("PROF"))
	bc := cases[i]
	g, _ := gbnf.Parse(bc.Grammar)
	f, _ := os.Create("/tmp/cpu.prof")
	pprof.StartCPUProfile(f)
	for i := 0; i < 10; i++ {
		mask.Compile(g, v)
	}
	pprof.StopCPUProfile()
	c, _ := mask.Compile(g, v)
	t.Logf("%+v", c.Stats())
	for _, s := range c.WalkSizes() {
		t.Log(s)
	}
}
