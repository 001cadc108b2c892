package mask_test

import (
	"testing"

	"github.com/structgen/structgen/internal/earley"
)

// TestRootFollow checks the root's follow set where the grammar calls
// the root again: a frame called last in the root pops through it, and
// a token that goes on past both pops takes what follows the root's
// recursive call ("cb" after "aa" below: z's "c", then the "b" after the
// inner root). The root's follow set was left out of its callees' (it
// is empty at the bottom of the stack), which filtered that cross point
// out and disallowed the token (Accept took it).
func TestRootFollow(t *testing.T) {
	v := testVocab(t, "ab", "ba", "aab", "abb", "bb", "aa", "ca", "ac", "cb", "cyb", "xc")
	for _, src := range []string{
		"root ::= \"a\" root \"b\" | \"a\" y | \"\"\ny ::= z\nz ::= root | \"c\" | \"x\" z \"y\"\n",
		"root ::= \"a\" root \"b\" | \"a\" z | \"\"\nz ::= root | \"c\" | \"x\" z \"y\"\n",
	} {
		c := compileSrc(t, src, v)
		r := earley.New(c.Grammar())
		words := make([]uint32, c.Words())
		for _, prefix := range []string{"", "a", "aa", "aaa", "aax", "aaxa", "aaac"} {
			m := c.NewMatcher()
			st := r.Start()
			for _, b := range []byte(prefix) {
				st = st.Next(b)
			}
			if err := m.AcceptBytes([]byte(prefix)); err != nil || st == nil {
				t.Fatalf("%q: prefix %q: %v (reference viable: %v)", src, prefix, err, st != nil)
			}
			m.FillMask(words)
			ref := refAllowed(v, st)
			for id := int32(0); int(id) < v.Size(); id++ {
				if got := words[id>>5]&(1<<(uint32(id)&31)) != 0; !v.IsEOG(id) && got != ref[id] {
					t.Errorf("%q after %q: token %q allowed=%v, reference says %v", src, prefix, v.Token(id), got, ref[id])
				}
			}
		}
	}
	crossCheckAll(t, []string{
		"root ::= \"a\" root \"b\" | \"a\" y | \"\"\ny ::= z\nz ::= root | \"c\" | \"x\" z \"y\"\n",
	}, v, 30, 12)
}
