package mask_test

import (
	"strings"
	"testing"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/grammartest"
	"github.com/structgen/structgen/mask"
)

// tokenVocab is the vocabulary for grammars with token references: ids
// 0–255 are special tokens named <[id]>, ids 256–511 the single bytes,
// 512 the end of generation.
func tokenVocab(t testing.TB) *mask.Vocab {
	toks := make([][]byte, 513)
	kinds := make([]mask.TokenKind, 513)
	for i := range 256 {
		toks[i] = []byte("<[" + itoa(i) + "]>")
		kinds[i] = mask.TokenSpecial
		toks[256+i] = []byte{byte(i)}
	}
	toks[512] = []byte("</s>")
	kinds[512] = mask.TokenSpecial
	v, err := mask.NewVocabKinds(toks, kinds, []int32{512})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestSuite runs the grammar regression suite (testdata/grammars) through
// the matcher: accepted strings are accepted and can end, prefixes are
// accepted and cannot end, rejected strings are rejected before their
// end; each string fed token by token is also checked against the masks.
// Failures point at the txtar line.
func TestSuite(t *testing.T) {
	bv := testVocab(t, commonExtra...)
	tv := tokenVocab(t)
	for _, tc := range grammartest.Cases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			g, err := gbnf.ParseWithRoot(tc.Grammar, tc.Root)
			if err != nil {
				t.Fatalf("%s: %v", tc.File, err)
			}
			usesTokens := false
			for _, s := range append(append(append([]grammartest.String(nil), tc.Accept...), tc.Reject...), tc.Prefix...) {
				usesTokens = usesTokens || s.HasTokens()
			}
			if strings.Contains(tc.Grammar, "<[") || strings.Contains(tc.Grammar, "<|") {
				usesTokens = true
			}
			v := bv
			if usesTokens {
				v = tv
			}
			c, err := mask.Compile(g, v)
			if err != nil {
				if tc.LeftRecursive && strings.Contains(err.Error(), "left recursion") {
					t.Logf("%s: rejected as documented: %v", tc.File, err)
					return
				}
				t.Fatalf("%s: %v", tc.File, err)
			}
			check := func(s grammartest.String, want string) {
				if !s.HasTokens() {
					// Plain bytes never match token references: feed them
					// as bytes.
					m := c.NewMatcher()
					err := m.AcceptBytes(s.Bytes())
					switch {
					case want == "reject" && err == nil:
						t.Errorf("%s: rejected string is a viable prefix (CanEnd=%v)", s.Pos(), m.CanEnd())
					case want != "reject" && err != nil:
						t.Errorf("%s: %s string rejected: %v", s.Pos(), want, err)
					case want == "accept" && !m.CanEnd():
						t.Errorf("%s: accepted string cannot end", s.Pos())
					case want == "prefix" && m.CanEnd():
						t.Errorf("%s: prefix can end", s.Pos())
					}
					if usesTokens {
						return
					}
				}
				m := c.NewMatcher()
				words := make([]uint32, c.Words())
				var toks []int32
				for _, seg := range s.Segments {
					if seg.IsToken {
						toks = append(toks, seg.Token)
						continue
					}
					for _, b := range seg.Text {
						if usesTokens {
							toks = append(toks, 256+int32(b))
						} else {
							toks = append(toks, int32(b))
						}
					}
				}
				for i, tok := range toks {
					m.FillMask(words)
					inMask := words[tok>>5]&(1<<(uint32(tok)&31)) != 0
					err := m.Accept(tok)
					if inMask != (err == nil) {
						t.Errorf("%s: token %d (#%d): mask says %v, Accept says %v", s.Pos(), tok, i, inMask, err)
						return
					}
					if err != nil {
						if want != "reject" {
							t.Errorf("%s: %s string rejected at token %d: %v", s.Pos(), want, i, err)
						}
						return
					}
				}
				switch want {
				case "reject":
					t.Errorf("%s: rejected string is a viable prefix (CanEnd=%v)", s.Pos(), m.CanEnd())
				case "accept":
					if !m.CanEnd() {
						t.Errorf("%s: accepted string cannot end", s.Pos())
					}
				case "prefix":
					if m.CanEnd() {
						t.Errorf("%s: prefix can end", s.Pos())
					}
				}
			}
			for _, s := range tc.Accept {
				check(s, "accept")
			}
			for _, s := range tc.Prefix {
				check(s, "prefix")
			}
			for _, s := range tc.Reject {
				check(s, "reject")
			}
			if !usesTokens {
				crossCheck(t, g, bv, 4, 30, uint64(len(tc.Name)))
			}
		})
	}
}
