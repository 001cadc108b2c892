package jsonkeys_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
	"github.com/structgen/structgen/mask/jsonkeys"
)

// Example_generate shows the decode loop with a guard: Filter after
// FillMask, Accept on both, Check after each step (undo and draw again on
// a dead end), and ShortestCompletion for a close-out. The "model" here
// always picks the allowed token with the lowest id, which would repeat
// "a" forever without the guard.
func Example_generate() {
	schema := `{"type":"object","propertyNames":{"enum":["a","b"]},"additionalProperties":{"type":"integer"}}`
	src, err := jsonschema2gbnf.Convert([]byte(schema))
	if err != nil {
		panic(err)
	}
	gr, err := gbnf.Parse(src)
	if err != nil {
		panic(err)
	}
	toks := []string{`{`, `,`, `"a"`, `"b"`, `:`, `}`, `1`, `</s>`}
	var raw [][]byte
	for _, t := range toks {
		raw = append(raw, []byte(t))
	}
	v, err := mask.NewVocab(raw, []int32{7})
	if err != nil {
		panic(err)
	}
	c, err := mask.Compile(gr, v)
	if err != nil {
		panic(err)
	}
	table := jsonkeys.NewTable(v) // once per vocabulary, shared

	m := c.NewMatcher() // per sequence
	g := table.NewGuard()
	bits := make([]uint32, c.Words())
	for !m.Ended() {
		m.FillMask(bits)
		before := append([]uint32(nil), bits...)
		if err := g.Filter(bits); err != nil {
			fmt.Println("dead end:", err)
			return
		}
		for id := range toks {
			if before[0]&(1<<id) != 0 && bits[0]&(1<<id) == 0 {
				fmt.Printf("after %s: Filter clears %s\n", g.Output(), toks[id])
			}
		}
		for {
			tok := int32(-1) // the model: the lowest allowed id
			for id := range toks {
				if bits[0]&(1<<id) != 0 {
					tok = int32(id)
					break
				}
			}
			if tok < 0 {
				fmt.Println("no token left")
				return
			}
			if err := m.Accept(tok); err != nil {
				panic(err)
			}
			if err := g.Accept(tok); err != nil {
				panic(err)
			}
			var de *jsonkeys.DeadEndError
			if err := g.Check(m); errors.As(err, &de) {
				fmt.Printf("after %s: Check rejects it (%s)\n", g.Output(), strings.TrimPrefix(err.Error(), "jsonkeys: "))
				_ = m.Rollback(1) // undo the step (not decoded yet) ...
				_ = g.Rollback(1)
				bits[0] &^= 1 << tok // ... and draw another token
				continue
			}
			break
		}
	}
	fmt.Println(string(g.Output()))

	// A close-out in the middle of a key that is already used.
	m.Reset()
	g.Reset()
	for _, tok := range []int32{0, 2, 4, 6, 1} { // {"a":1,
		_ = m.Accept(tok)
		_ = g.Accept(tok)
	}
	plain, _ := m.ShortestCompletion()
	sc, err := jsonkeys.ShortestCompletion(m, g)
	fmt.Printf("grammar's shortest completion %s, without a duplicate %s (%v)\n", plain, sc, err)
	// Output:
	// after {"a":1,: Filter clears "a"
	// after {"a":1,"b":1,: Check rejects it (no unused key is possible for the root object (it has 2 keys): the grammar allows only keys it already has)
	// {"a":1,"b":1}
	// grammar's shortest completion "a":0}, without a duplicate "b":0} (<nil>)
}
