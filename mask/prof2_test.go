package mask_test

import (
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

func TestProfCompileSchema(t *testing.T) {
	if os.Getenv("PROFS") == "" {
		t.Skip()
	}
	cases, v := loadBench(t)
	mask.PrepareVocab(v)
	i, _ := strconv.Atoi(os.Getenv("PROFS"))
	bc := cases[i]
	g, err := gbnf.Parse(grammarOf(t, bc))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Create("/tmp/cpu.prof")
	pprof.StartCPUProfile(f)
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	for i := 0; i < 5; i++ {
		mask.Compile(g, v)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	pprof.StopCPUProfile()
	cpu := time.Duration(r1.Utime.Nano()+r1.Stime.Nano()-r0.Utime.Nano()-r0.Stime.Nano()) / 5
	t.Logf("CPU per compile: %v", cpu)
	mask.PVisits, mask.PNodes, mask.SVisits = 0, 0, 0
	mask.StartVisits = map[int32]int{}
	c2, _ := mask.Compile(g, v)
	type kv struct{ q, n int }
	var kvs []kv
	for q, n := range mask.StartVisits {
		kvs = append(kvs, kv{int(q), n})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].n > kvs[j].n })
	for _, x := range kvs[:min(12, len(kvs))] {
		t.Logf("start q%d: %d visits; %s", x.q, x.n, c2.StateInfo(int32(x.q)))
	}
	mask.StartVisits = nil
	t.Logf("pvisit group-visits %d trie nodes %d; single visits %d", mask.PVisits, mask.PNodes, mask.SVisits)
	c, _ := mask.Compile(g, v)
	t.Logf("%+v %v", c.Stats(), c.FrameNames())
	ws := c.WalkSizes()
	total := 0
	for _, s := range ws {
		var q, f, acc, cross int
		fmt.Sscanf(s, "q%d(f%d): acc=%d cross=%d", &q, &f, &acc, &cross)
		total += acc
		if acc > 2000 {
			t.Log(s)
		}
	}
	t.Log("total accepted", total)
}
