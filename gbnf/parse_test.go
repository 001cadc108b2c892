package gbnf_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2"

	"github.com/structgen/structgen/gbnf"
)

// printTests are {src, wantPrinted}: the canonical form of each grammar.
var printTests = []struct {
	src, want string
}{
	// Rules, alternatives, sequences, groups.
	{`root ::= "a"`, `root ::= "a"`},
	{`root  ::= "a" | [bdx-z] | [^1-3]`, `root ::= "a" | [bdx-z] | [^1-3]`},
	{`root ::= "a" "b" | "c"`, `root ::= "a" "b" | "c"`},
	{`root ::= ("a" "b") "c"`, `root ::= "a" "b" "c"`},
	{`root ::= ("a" | "b") | "c"`, `root ::= "a" | "b" | "c"`},
	{`root ::= ("a" | "b") "c"`, `root ::= ("a" | "b") "c"`},
	{`root ::= ((("a")))`, `root ::= "a"`},
	{`root ::= ()`, `root ::= ""`},
	{`root ::= ("a" "b")*`, `root ::= ("a" "b")*`},
	{`root ::= ("a" | "b")+ "c"?`, `root ::= ("a" | "b")+ "c"?`},
	{`root ::= x y
x ::= "x"
y ::= "y"`, "root ::= x y\nx ::= \"x\"\ny ::= \"y\""},
	// Empty alternatives and "".
	{`root ::=`, `root ::= ""`},
	{`root ::= ""`, `root ::= ""`},
	{`root ::= | "a"`, `root ::= "" | "a"`},
	{`root ::= "a" |`, `root ::= "a" | ""`},
	{`root ::= "a" "" "b"`, `root ::= "a" "b"`},
	{`root ::= "" "" ""`, `root ::= ""`},
	// Repetition.
	{`root ::= "a"*`, `root ::= "a"*`},
	{`root ::= "a"+`, `root ::= "a"+`},
	{`root ::= "a"?`, `root ::= "a"?`},
	{`root ::= "a"{2}`, `root ::= "a"{2}`},
	{`root ::= "a"{2,}`, `root ::= "a"{2,}`},
	{`root ::= "a"{ 4}`, `root ::= "a"{4}`},
	{`root ::= "a"{2,4}`, `root ::= "a"{2,4}`},
	{`root ::= "a"{ 2 , 4 }`, `root ::= "a"{2,4}`},
	{`root ::= "a"{0,1} "b"{1,} "c"{0,} "d"{3,3} "e"{0}`, `root ::= "a"? "b"+ "c"* "d"{3} "e"{0}`},
	{`root ::= "a"**`, `root ::= "a"**`},
	{`root ::= "a"{2}{3}`, `root ::= "a"{2}{3}`},
	{`root ::= [a]{0,2000}`, `root ::= [a]{0,2000}`},
	{`root ::= [a]{100000}`, `root ::= [a]{100000}`},
	{`root ::= "abc"*`, `root ::= "abc"*`},
	// Literals and escapes.
	{`root ::= "\x41\x62"`, `root ::= "Ab"`},
	{`root ::= "\u00e9\u00E9"`, `root ::= "éé"`},
	{`root ::= "\U0001F600"`, `root ::= "😀"`},
	{`root ::= "\t\r\n\\\""`, `root ::= "\t\r\n\\\""`},
	{`root ::= "\[\]\-"`, `root ::= "[]-"`},
	{`root ::= "\x00\x1f\x7f\x80\xa0\xa1"`, `root ::= "\x00\x1F\x7F\x80\xA0¡"`},
	{`root ::= "\u2028\uFEFF\uE000\U0010FFFF"`, `root ::= "\u2028\uFEFF\uE000\U0010FFFF"`},
	{"root ::= \"a\tb\"", `root ::= "a\tb"`},
	{"root ::= \"line\nbreak\"", `root ::= "line\nbreak"`},
	{`root ::= "日本語 ✅ 🔵"`, `root ::= "日本語 ✅ 🔵"`},
	{`root ::= "#not a comment"`, `root ::= "#not a comment"`},
	// Classes: sorted, merged, escaped.
	{`root ::= [cba]`, `root ::= [a-c]`},
	{`root ::= [a-cb-d]`, `root ::= [a-d]`},
	{`root ::= [ac]`, `root ::= [ac]`},
	{`root ::= [ba]`, `root ::= [ab]`},
	{`root ::= [a-ca-c]`, `root ::= [a-c]`},
	{`root ::= [-a]`, `root ::= [-a]`},
	{`root ::= [a-]`, `root ::= [-a]`},
	{`root ::= [+-]`, `root ::= [+-]`},
	{`root ::= [-+*/]`, `root ::= [*+\x2D/]`},
	{`root ::= [!--]`, `root ::= [!-\x2D]`},
	{`root ::= [a-b-c]`, `root ::= [-a-c]`},
	{`root ::= [a-b-cd-]`, `root ::= [-a-d]`},
	{`root ::= [+a-b-]`, `root ::= [+\x2Dab]`},
	{`root ::= [\]]`, `root ::= [\]]`},
	{`root ::= [\\]`, `root ::= [\\]`},
	{`root ::= [[]`, `root ::= [[]`},
	{`root ::= [\-]`, `root ::= [-]`},
	{`root ::= [\x5E]`, `root ::= [\x5E]`},
	{`root ::= [\x5Ea]`, `root ::= [\x5Ea]`},
	{`root ::= [^^]`, `root ::= [^^]`},
	{`root ::= [\x5E-z]`, `root ::= [\x5E-z]`},
	{`root ::= [\x5E_]`, `root ::= [\x5E_]`},
	{`root ::= [_^]`, `root ::= [\x5E_]`},
	{`root ::= [\x2D-/]`, `root ::= [--/]`},
	{`root ::= [^\x5E-z]`, `root ::= [^^-z]`},
	{`root ::= [""]`, `root ::= ["]`},
	{`root ::= [ \t\n]`, `root ::= [\t\n ]`},
	{`root ::= [^"\\\x7F\x00-\x1F]`, `root ::= [^\x00-\x1F"\\\x7F]`},
	{`root ::= [ぁ-ゟ]`, `root ::= [ぁ-ゟ]`},
	{`root ::= [😀-😏]`, `root ::= [😀-😏]`},
	{`root ::= .`, `root ::= .`},
	{`root ::= [^\x00-\U0010FFFF]`, `root ::= [^\x00-\U0010FFFF]`},
	// Surrogates are dropped from ranges, so these are the same class.
	{`root ::= [\x00-\U0010FFFF]`, `root ::= [\x00-\U0010FFFF]`},
	{`root ::= [\x00-\uD7FF\uE000-\U0010FFFF]`, `root ::= [\x00-\U0010FFFF]`},
	{`root ::= [\uD000-\uD7FF\uE000-\uE0FF]`, `root ::= [퀀-\uE0FF]`},
	{`root ::= [\uD7FF-\uE000]`, `root ::= [\uD7FF-\uE000]`},
	{`root ::= [\uD7FE-\uD800]`, `root ::= [\uD7FE\uD7FF]`},
	{`root ::= [a-\UFFFFFFFF]`, `root ::= [a-\U0010FFFF]`},
	// Token references.
	{`root ::= <[1000]> !<[1001]> <[1001]>`, `root ::= <[1000]> !<[1001]> <[1001]>`},
	{`root ::= <|im_start|> !<|im_end|>* <|im_end|>`, `root ::= <|im_start|> !<|im_end|>* <|im_end|>`},
	{`root ::= <[0]>{2,3}`, `root ::= <[0]>{2,3}`},
	// Names, comments, newlines.
	{"root ::= 1a-b\n1a-b ::= \"x\"", "root ::= 1a-b\n1a-b ::= \"x\""},
	{"root ::= - \n- ::= \"x\"", "root ::= -\n- ::= \"x\""},
	{"# header\n\nroot ::= \"a\" # trailing\n# between\n\nb ::= \"b\"\n\n", "root ::= \"a\"\nb ::= \"b\""},
	{"root ::= \"a\" |\n   \"b\" |\n\n  \"c\"", `root ::= "a" | "b" | "c"`},
	{"root ::=\n  \"a\"", `root ::= "a"`},
	{"root ::= (\n  \"a\"\n  | \"b\" # c\n)\n", `root ::= "a" | "b"`},
	{"root ::= (\"a\"\n\"b\"){2,3}", `root ::= ("a" "b"){2,3}`},
	{"root ::= \"a\"\r\nb ::= \"b\"\r\n", "root ::= \"a\"\nb ::= \"b\""},
	{"root ::= \"a\"\rb ::= \"b\"", "root ::= \"a\"\nb ::= \"b\""},
	{"root::=\"a\"[b]c\nc::=\"c\"", "root ::= \"a\" [b] c\nc ::= \"c\""},
	{"root ::= \"a\"\t\"b\"", `root ::= "a" "b"`},
	// A later definition replaces an earlier one, as in llama.cpp.
	{"root ::= \"a\"\nroot ::= \"b\"", `root ::= "b"`},
	{"root ::= x\nx ::= \"1\"\nroot ::= x x", "root ::= x x\nx ::= \"1\""},
}

func TestPrint(t *testing.T) {
	for _, tt := range printTests {
		g, err := gbnf.Parse(tt.src)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.src, err)
			continue
		}
		got := strings.TrimSuffix(g.String(), "\n")
		if got != tt.want {
			t.Errorf("Parse(%q).String():\n got %s\nwant %s", tt.src, got, tt.want)
		}
		roundTrip(t, tt.src, g, "root")
	}
}

// errorTests are {src, wantErr}: the first error, as printed.
var errorTests = []struct {
	src, want string
}{
	// Unterminated things.
	{`root ::= "a`, `1:10: unterminated string literal`},
	{`root ::= "a\`, `1:12: unterminated escape sequence`},
	{`root ::= [a`, `1:10: unterminated character class`},
	{`root ::= [a-`, `1:10: unterminated character class`},
	{`root ::= [^`, `1:10: unterminated character class`},
	{`root ::= ("a"`, `1:14: unexpected end of input (unclosed parenthesis)`},
	{"root ::= (\"a\"\n\n", `3:1: unexpected end of input (unclosed parenthesis)`},
	{`root ::= <[12`, `1:14: expected ]> to end the token reference`},
	{`root ::= <|abc`, `1:10: unterminated token reference (expected |>)`},
	// Escapes.
	{`root ::= "\q"`, `1:11: unknown escape "\\q" (valid: \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \] \-)`},
	{`root ::= [\d]`, `1:11: unknown escape "\\d" (valid: \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \] \-)`},
	{`root ::= "\é"`, `1:11: unknown escape "\\é" (valid: \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \] \-)`},
	{`root ::= "\x4"`, `1:11: \x needs 2 hex digits`},
	{`root ::= "\u12G4"`, `1:11: \u needs 4 hex digits`},
	{`root ::= "\U0001F60"`, `1:11: \U needs 8 hex digits`},
	{`root ::= "\uD800"`, `1:11: U+D800 is a surrogate, not a Unicode scalar value: UTF-8 text cannot contain it`},
	{`root ::= [\uDFFF]`, `1:11: U+DFFF is a surrogate, not a Unicode scalar value: UTF-8 text cannot contain it`},
	{`root ::= "\U00110000"`, `1:11: U+110000 is above U+10FFFF, the largest code point`},
	{`root ::= [\uD800-\uDFFF]`, `1:11: range U+D800-U+DFFF holds no Unicode scalar value`},
	{`root ::= [^\uD800-\uDFFF]`, `1:12: range U+D800-U+DFFF holds no Unicode scalar value`},
	{`root ::= [\U00110000-\U00120000]`, `1:11: range U+110000-U+120000 holds no Unicode scalar value`},
	{"root ::= (\"a\"\n\"b\"){2,\n3}", `2:8: unexpected newline in repetition (expected a number or "}")`},
	{"root ::= \"a\"\n  {2}", `2:3: unexpected "{" (expected a rule: name ::= ...)`},
	// Classes.
	{`root ::= [z-a]`, `1:11: inverted range z-a in character class`},
	{`root ::= [a-z0-9Z-A]`, `1:17: inverted range Z-A in character class`},
	{`root ::= []`, `1:10: empty character class`},
	{`root ::= [^]`, `1:10: empty character class`},
	// Repetition.
	{`root ::= "a"{3,2}`, `1:13: repetition {3,2} has its minimum above its maximum`},
	{`root ::= "a"{100001}`, `1:13: repetition bound 100001 is over the limit 100000 (MaxRepeat)`},
	{`root ::= "a"{0,99999999999999999999}`, `1:13: repetition bound 99999999999999999999 is over the limit 100000 (MaxRepeat)`},
	{`root ::= "a"{,}`, `1:14: unexpected "," in repetition (expected a number)`},
	{`root ::= "a"{,10}"`, `1:14: unexpected "," in repetition (expected a number)`},
	{`root ::= "a"{}`, `1:14: unexpected "}" in repetition (expected a number)`},
	{`root ::= "a"{2 3}`, `1:16: unexpected number 3 in repetition (expected "," or "}")`},
	{`root ::= "a"{2,3`, `1:17: unexpected end of input in repetition (expected "," or "}")`},
	{`root ::= "a"{x}`, `1:14: unexpected name "x" in repetition (expected a number)`},
	{"root ::= \"a\"{2,\n3}", `1:16: unexpected newline in repetition (expected a number or "}")`},
	{`root ::= *`, `1:10: unexpected "*" (a repetition needs an element before it)`},
	{`root ::= "a" | +`, `1:16: unexpected "+" (a repetition needs an element before it)`},
	{`root ::= ({2})`, `1:11: unexpected "{" (a repetition needs an element before it)`},
	{`root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}`, `1:36: nested repetitions multiply to more than 1000000 (limit MaxRepeatProduct); reduce the bounds or the nesting`},
	{`root ::= ((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}`, `1:28: nested repetitions multiply to more than 1000000 (limit MaxRepeatProduct); reduce the bounds or the nesting`},
	{`root ::= "a"{1000}{1001}`, `1:13: nested repetitions multiply to more than 1000000 (limit MaxRepeatProduct); reduce the bounds or the nesting`},
	// References and roots.
	{`root ::= x`, `1:10: undefined rule "x"`},
	{"root ::= a | b\na ::= c", `1:14: undefined rule "b" (and 1 more errors)`},
	{`foo ::= "x"`, `1:1: no rule named "root" (the root rule)`},
	{``, `1:1: grammar has no rules`},
	{"\n# only a comment\n", `1:1: grammar has no rules`},
	// Rule structure and newlines.
	{"root ::= \"a\"\n| \"b\"", `2:1: unexpected "|" at the start of a line (an alternative continues on the next line only after a trailing "|", or inside parentheses)`},
	{"root\n::= \"a\"", `1:5: unexpected newline (expected ::= after the rule name)`},
	{`root "a"`, `1:6: unexpected string literal "a" (expected ::= after the rule name)`},
	{`root ::= a b ::= c`, `1:14: unexpected "::=" (a rule must start on a new line)`},
	{"root ::= \"a\" |\nb ::= \"b\"", `2:3: unexpected "::=" (a rule must start on a new line)`},
	{`root ::= "a" )`, `1:14: unexpected ")" (no open parenthesis)`},
	{`root : := "a"`, `1:6: expected ::=`},
	{`root ::= "a" @`, `1:14: unexpected character '@'`},
	{`::= "a"`, `1:1: unexpected "::=" (expected a rule: name ::= ...)`},
	{`"a" ::= "b"`, `1:1: unexpected string literal "a" (expected a rule: name ::= ...)`},
	{`root_x ::= "a"`, `1:5: unexpected character '_'`},
	{"root ::= \"a\xff\"", `1:12: invalid UTF-8 byte 0xFF`},
	{"root ::= \"a\x00\"", `1:12: NUL byte in grammar`},
	{"root ::= \x00", `1:10: NUL byte in grammar`},
	{"root ::= \"a\" # \xff", `1:16: invalid UTF-8 byte 0xFF`},
	{"# \x00\nroot ::= \"a\"", `1:3: NUL byte in grammar`},
	// Token references.
	{`root ::= <[abc]>`, `1:12: expected a token id (digits) in <[id]>`},
	{`root ::= < [1]>`, `1:10: expected a token reference <[id]> or <|text|> (llama.cpp's <text> needs a vocabulary; only <|text|> is kept by text)`},
	{`root ::= <think>`, `1:10: expected a token reference <[id]> or <|text|> (llama.cpp's <text> needs a vocabulary; only <|text|> is kept by text)`},
	{`root ::= ! <[1]>`, `1:10: expected a token reference <[id]> or <|text|> after "!"`},
	{`root ::= <[99999999999]>`, `1:12: token id 99999999999 is over the limit 2147483647 (MaxTokenID)`},
	{`root ::= <[2147483648]>`, `1:12: token id 2147483648 is over the limit 2147483647 (MaxTokenID)`},
	{`root ::= <|a>b|>`, `1:13: token text must end with |> (the text of <|text|> cannot contain ">")`},
	{`root ::= <||>`, `1:10: empty token text in <||>`},
	// The first error wins, even when a later one is lexical.
	{`root ::= ) "\q"`, `1:10: unexpected ")" (no open parenthesis)`},
	{`root ::= "a" "\q" )`, `1:15: unknown escape "\\q" (valid: \xHH \uHHHH \UHHHHHHHH \t \r \n \\ \" \[ \] \-)`},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range errorTests {
		g, err := gbnf.Parse(tt.src)
		if err == nil {
			t.Errorf("Parse(%q) = %q, want error %q", tt.src, g.String(), tt.want)
			continue
		}
		if g != nil {
			t.Errorf("Parse(%q) returned a grammar with its error", tt.src)
		}
		if got := err.Error(); got != tt.want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tt.src, got, tt.want)
		}
		var e *gbnf.Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q): error %T is not a *gbnf.Error", tt.src, err)
		}
	}
}

// TestSyntaxErrorCause: a syntax error keeps participle's error, at the
// same position.
func TestSyntaxErrorCause(t *testing.T) {
	_, err := gbnf.Parse("root ::= \"a\" )")
	var ute *participle.UnexpectedTokenError
	if !errors.As(err, &ute) {
		t.Fatalf("%v: no participle error inside", err)
	}
	var e *gbnf.Error
	if !errors.As(err, &e) || ute.Position().Line != e.Pos.Line || ute.Position().Column != e.Pos.Col {
		t.Errorf("positions differ: %v vs %v", ute.Position(), e.Pos)
	}
}

func TestParseLimits(t *testing.T) {
	deep := strings.Repeat("(", gbnf.MaxDepth) + `"a"` + strings.Repeat(")", gbnf.MaxDepth)
	if _, err := gbnf.Parse("root ::= " + deep); err != nil {
		t.Errorf("%d nested groups: %v", gbnf.MaxDepth, err)
	}
	tooDeep := strings.Repeat("(", gbnf.MaxDepth+1) + `"a"` + strings.Repeat(")", gbnf.MaxDepth+1)
	want := "1:1010: parentheses nested more than 1000 deep (limit MaxDepth)"
	if _, err := gbnf.Parse("root ::= " + tooDeep); err == nil || err.Error() != want {
		t.Errorf("%d nested groups: got %v, want %s", gbnf.MaxDepth+1, err, want)
	}
	// A million open parentheses: rejected by the lexer, no deep recursion.
	if _, err := gbnf.Parse("root ::= " + strings.Repeat("(", 1_000_000)); err == nil {
		t.Errorf("a million open parentheses parsed")
	}
	stacked := `root ::= "a"` + strings.Repeat("?", gbnf.MaxDepth+1)
	if _, err := gbnf.Parse(stacked); err == nil || !strings.Contains(err.Error(), "MaxDepth") {
		t.Errorf("%d stacked repetitions: got %v, want a MaxDepth error", gbnf.MaxDepth+1, err)
	}
	big := "root ::= \"" + strings.Repeat("a", gbnf.MaxSourceBytes) + "\""
	if _, err := gbnf.Parse(big); err == nil || !strings.Contains(err.Error(), "MaxSourceBytes") {
		t.Errorf("oversized source: got %v, want a MaxSourceBytes error", err)
	}
	var rules strings.Builder
	rules.WriteString("root ::= r0\n")
	for i := 0; i < gbnf.MaxRules; i++ {
		rules.WriteString("r")
		rules.WriteString(strings.Repeat("x", 0))
		rules.WriteString(itoa(int32(i)))
		rules.WriteString(" ::= \"a\"\n")
	}
	if _, err := gbnf.Parse(rules.String()); err == nil || !strings.Contains(err.Error(), "MaxRules") {
		t.Errorf("%d rules: got %v, want a MaxRules error", gbnf.MaxRules+1, err)
	}
	// Many errors are capped.
	var refs strings.Builder
	refs.WriteString("root ::=")
	for i := 0; i < 3*gbnf.MaxErrors; i++ {
		refs.WriteString(" u")
		refs.WriteString(itoa(int32(i)))
	}
	_, err := gbnf.Parse(refs.String())
	var list gbnf.ErrorList
	if !errors.As(err, &list) || len(list) != gbnf.MaxErrors {
		t.Fatalf("undefined references: got %v, want %d errors", err, gbnf.MaxErrors)
	}
	if last := list[len(list)-1].Msg; !strings.Contains(last, "20 more errors not shown") {
		t.Errorf("last error %q does not say how many were left out", last)
	}
}

func TestParseWithRoot(t *testing.T) {
	src := "foobar ::= \"foobar\" x\nx ::= \"x\""
	g, err := gbnf.ParseWithRoot(src, "foobar")
	if err != nil {
		t.Fatal(err)
	}
	if g.Rules[g.Root].Name != "foobar" {
		t.Errorf("root is %q", g.Rules[g.Root].Name)
	}
	g, err = gbnf.ParseWithRoot(src, "x")
	if err != nil || g.Root != 1 {
		t.Errorf("root x: %v, %v", g, err)
	}
	if _, err := gbnf.ParseWithRoot(src, "nonexistent"); err == nil || err.Error() != `1:1: no rule named "nonexistent" (the root rule)` {
		t.Errorf("nonexistent root: %v", err)
	}
}

// TestPositions checks node and rule positions (1-based, byte columns).
func TestPositions(t *testing.T) {
	g, err := gbnf.Parse("# c\nroot ::= \"é\" [a]\n  x ::= (\"b\")*\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		got  gbnf.Pos
		want gbnf.Pos
	}{
		{g.Rules[0].Pos, gbnf.Pos{Offset: 4, Line: 2, Col: 1}},
		{g.Rules[0].Body.Subs[0].Pos, gbnf.Pos{Offset: 13, Line: 2, Col: 10}},
		{g.Rules[0].Body.Subs[1].Pos, gbnf.Pos{Offset: 18, Line: 2, Col: 15}},
		{g.Rules[1].Pos, gbnf.Pos{Offset: 24, Line: 3, Col: 3}},
		{g.Rules[1].Body.Pos, gbnf.Pos{Offset: 31, Line: 3, Col: 10}},
		{g.Rules[1].Body.Subs[0].Pos, gbnf.Pos{Offset: 31, Line: 3, Col: 10}},
	}
	for i, w := range want {
		if w.got != w.want {
			t.Errorf("position %d: got %+v, want %+v", i, w.got, w.want)
		}
	}
}
