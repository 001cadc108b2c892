package mask_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

func TestSlowSteps(t *testing.T) {
	if os.Getenv("SLOW") == "" {
		t.Skip()
	}
	cases, v := loadBench(t)
	mask.PrepareVocab(v)
	i, _ := strconv.Atoi(os.Getenv("SLOW"))
	bc := cases[i]
	g, err := gbnf.Parse(grammarOf(t, bc))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := mask.Compile(g, v)
	m := c.NewMatcher()
	words := make([]uint32, c.Words())
	var out []byte
	for i, tok := range bc.Tokens {
		if os.Getenv("TRACE") != "" && i >= 72 && i <= 77 {
			for _, l := range m.PlanTrace() {
				t.Log(l)
			}
		}
		t0 := time.Now()
		m.FillMask(words)
		d := time.Since(t0)
		if d > 150*time.Microsecond {
			t.Logf("step %d %v after ...%q next %q", i, d, out[max(0, len(out)-40):], v.Token(tok))
		}
		m.Accept(tok)
		out = append(out, v.Token(tok)...)
	}
}
