package mask_test

import (
	"math/rand/v2"
	"testing"
)

// TestCanContinue checks Matcher.CanContinue against the mask along random
// walks: with a vocabulary that has a token for every byte, something can
// follow the output exactly where the mask allows a token that is not the
// end of generation.
func TestCanContinue(t *testing.T) {
	v := testVocab(t, commonExtra...)
	cases := []struct {
		src string
		// where the walk is forced through: the answer after these bytes
		prefix string
		want   bool
	}{
		{`root ::= "a"`, "", true},
		{`root ::= "a"`, "a", false},
		{`root ::= "a"+`, "a", true},
		{`root ::= "a" "b"?`, "a", true},
		{`root ::= "a" "b"?`, "ab", false},
		{`root ::= "{" ws "}" ws
ws ::= [ \t\n]{0,2}`, "{}  ", false},
		{`root ::= "{" ws "}" ws
ws ::= [ \t\n]{0,2}`, "{} ", true},
		{`root ::= [0-9]{1,3}`, "123", false},
		{`root ::= [0-9]{1,3}`, "12", true},
	}
	for _, tc := range cases {
		m := compileSrc(t, tc.src, v).NewMatcher()
		if err := m.AcceptBytes([]byte(tc.prefix)); err != nil {
			t.Fatal(err)
		}
		if got := m.CanContinue(); got != tc.want {
			t.Errorf("%q after %q: CanContinue %v, want %v", tc.src, tc.prefix, got, tc.want)
		}
	}

	grammars := []string{
		`root ::= "a" | "b" "c"`,
		`root ::= [a-z]{1,4} ("!" | "")`,
		`root ::= "(" root ")" | ""`,
		`root ::= "{" ws ("\"a\"" ws ":" ws [0-9]{1,3} ws)? "}" ws
ws ::= [ ]{0,2}`,
		`root ::= [0-9]{1,3} ("." [0-9]{1,2})? ([eE] [0-9])?`,
		`root ::= "x" ([é日] | "本語"){0,3}`,
	}
	words := make([]uint32, (v.Size()+31)/32)
	for i, src := range grammars {
		c := compileSrc(t, src, v)
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		ends := 0
		for w := 0; w < 40; w++ {
			m := c.NewMatcher()
			var out []byte
			for s := 0; s < 30; s++ {
				m.FillMask(words)
				var allowed []int32
				for id := int32(0); int(id) < v.Size(); id++ {
					if words[id>>5]&(1<<(uint32(id)&31)) != 0 && !v.IsEOG(id) {
						allowed = append(allowed, id)
					}
				}
				if got := m.CanContinue(); got != (len(allowed) > 0) {
					t.Fatalf("%q after %q: CanContinue %v, the mask allows %d tokens besides the end", src, out, got, len(allowed))
				}
				if len(allowed) == 0 {
					ends++
					break
				}
				id := allowed[rng.IntN(len(allowed))]
				if err := m.Accept(id); err != nil {
					t.Fatal(err)
				}
				out = append(out, v.Token(id)...)
			}
		}
		if i != 2 && ends == 0 {
			t.Errorf("%q: no walk reached an end where nothing can follow", src)
		}
	}
}
