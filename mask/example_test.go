package mask_test

import (
	"fmt"
	"math"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/mask"
)

// A toy vocabulary: token i is tokens[i]; token 7 ends a generation.
var toyTokens = [][]byte{[]byte(`{"`), []byte(`ok`), []byte(`":`), []byte(`true`), []byte(`false`), []byte(`}`), []byte(`o`), []byte(`</s>`)}

func toyVocab() *mask.Vocab {
	v, err := mask.NewVocab(toyTokens, []int32{7})
	if err != nil {
		panic(err)
	}
	return v
}

func allowed(bits []uint32) []string {
	var out []string
	for id := range toyTokens {
		if bits[id/32]&(1<<(id%32)) != 0 {
			out = append(out, string(toyTokens[id]))
		}
	}
	return out
}

// Compile a grammar against a vocabulary once; each sequence gets a
// Matcher, which gives the mask of the allowed tokens at every step.
func ExampleCompile() {
	g, err := gbnf.Parse(`root ::= "{\"ok\":" ("true" | "false") "}"`)
	if err != nil {
		panic(err)
	}
	c, err := mask.Compile(g, toyVocab()) // shared, safe for concurrent use
	if err != nil {
		panic(err)
	}
	m := c.NewMatcher() // one per sequence
	bits := make([]uint32, c.Words())
	for _, tok := range []int32{0, 1, 2, 3, 5, 7} { // {" ok ": true } </s>
		m.FillMask(bits)
		fmt.Printf("%q may follow; taking %q\n", allowed(bits), toyTokens[tok])
		if err := m.Accept(tok); err != nil {
			panic(err)
		}
	}
	fmt.Println("ended:", m.Ended())
	// Output:
	// ["{\""] may follow; taking "{\""
	// ["ok" "o"] may follow; taking "ok"
	// ["\":"] may follow; taking "\":"
	// ["true" "false"] may follow; taking "true"
	// ["}"] may follow; taking "}"
	// ["</s>"] may follow; taking "</s>"
	// ended: true
}

// Apply masks logits in place: disallowed tokens get -Inf, so any sampler
// picks an allowed one. Forced says which bytes the grammar fixes next
// (the engine decodes them in one batch instead of sampling them).
func ExampleMatcher_Apply() {
	g, _ := gbnf.Parse(`root ::= "{\"ok\":" ("true" | "false") "}"`)
	c, _ := mask.Compile(g, toyVocab())
	m := c.NewMatcher()
	fmt.Printf("forced: %q\n", m.Forced())
	_ = m.AcceptBytes([]byte(`{"ok":`))
	logits := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	m.Apply(logits)
	for id, l := range logits {
		if !math.IsInf(float64(l), -1) {
			fmt.Printf("%q: %v\n", toyTokens[id], l)
		}
	}
	// Output:
	// forced: "{\"ok\":"
	// "true": 4
	// "false": 5
}

// Rollback undoes accepted tokens, e.g. after a speculative draft.
func ExampleMatcher_Rollback() {
	g, _ := gbnf.Parse(`root ::= "{\"ok\":" ("true" | "false") "}"`)
	c, _ := mask.Compile(g, toyVocab())
	m := c.NewMatcher()
	for _, tok := range []int32{0, 1, 2, 3} {
		_ = m.Accept(tok)
	}
	fmt.Println(m.Tokens(), m.Accept(4) != nil) // false cannot follow true
	_ = m.Rollback(1)
	fmt.Println(m.Tokens(), m.Accept(4))
	// Output:
	// 4 true
	// 3 <nil>
}
