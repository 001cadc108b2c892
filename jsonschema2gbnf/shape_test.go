package jsonschema2gbnf

import (
	"strings"
	"testing"
)

// The grammar text: shared primitives, counted repetition for lengths,
// readable rule names from the JSON pointer, no whitespace rule in compact
// mode.
func TestGrammarShape(t *testing.T) {
	cases := []struct {
		schema string
		opts   []Option
		want   []string
		absent []string
	}{
		{`{"type":"string","minLength":1,"maxLength":5000}`, nil,
			[]string{`root ::= string-1-5000`, `string-1-5000 ::= "\"" char{1,5000} "\""`, `char ::= `}, []string{`ws ::=`}},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}`, nil,
			[]string{`root ::= "{" "\"a\":" string "," "\"b\":" string "}"`, `string ::= "\"" char* "\""`}, []string{`ws`}},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, []Option{FlexibleWhitespace(8)},
			[]string{`root ::= "{" ws "\"a\":" ws integer ws "}"`, `ws ::= ( " " | "\n" [ \t]{0,8} )?`}, nil},
		{`{"$defs":{"customerAddress":{"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}}},"properties":{"home":{"$ref":"#/$defs/customerAddress"},"work":{"$ref":"#/$defs/customerAddress"}}}`, nil,
			[]string{`customerAddress ::= `, `"\"home\":" customerAddress`, `"\"work\":" customerAddress`, `[0-9]{5}`}, nil},
		{`{"type":"array","items":{"type":"integer","minimum":1,"maximum":12},"maxItems":3}`, nil,
			[]string{`){0,2})? "]"`, `[1-9] | "1" [0-2]`}, nil},
		{`{"type":["array","object"]}`, nil, []string{`root ::= array | object`}, nil},
		{`{"type":"string","maxLength":2000000}`, nil, nil, []string{`{2000000}`, `{0,2000000}`}},
		// A character class under a length that needs the automaton (the
		// not-pattern) stays a counted repetition, not 100 nested groups.
		{`{"type":"string","not":{"pattern":"[^a-z ]"},"maxLength":100}`, nil, []string{`[ a-z]{0,100}`}, nil},
		{`{"type":"string","not":{"pattern":"[^a-z ]"},"minLength":7,"maxLength":100}`, nil, []string{`[ a-z]{7}`, `[ a-z]{0,93}`}, nil},
		// Alternatives that are all unanchored share one kchar* per end.
		{`{"type":"string","pattern":"ab|cd|ef"}`, nil, []string{`"\"" kchar* ("ab" | "cd" | "ef") kchar* "\""`}, nil},
		// A length the pattern implies keeps the pattern's counted
		// repetition (no automaton with one state per count).
		{`{"type":"string","minLength":1,"pattern":"^(?:\\S+\\s+){0,199}\\S+$"}`, nil, []string{`{0,199}`}, nil},
	}
	for _, tc := range cases {
		src, err := Convert([]byte(tc.schema), tc.opts...)
		if err != nil {
			t.Fatalf("%s: %v", tc.schema, err)
		}
		mustParse(t, src)
		for _, w := range tc.want {
			if !strings.Contains(src, w) {
				t.Errorf("%s: grammar lacks %q:\n%s", tc.schema, w, src)
			}
		}
		for _, w := range tc.absent {
			if strings.Contains(src, w) {
				t.Errorf("%s: grammar has %q:\n%s", tc.schema, w, src)
			}
		}
		// each shared primitive is defined once
		for _, p := range []string{"char ::=", "string ::=", "ws ::=", "value ::="} {
			if strings.Count(src, "\n"+p)+boolInt(strings.HasPrefix(src, p)) > 1 {
				t.Errorf("%s: %q defined twice", tc.schema, p)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Lengths beyond gbnf's repetition bound are nested blocks that count
// exactly.
func TestBigRepetition(t *testing.T) {
	schema := `{"type":"string","minLength":150000,"maxLength":250001}`
	src, err := Convert([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	mustParse(t, src)
	for _, w := range []string{"{1000}", "{150}"} {
		if !strings.Contains(src, w) {
			t.Errorf("grammar lacks %q:\n%s", w, src)
		}
	}
}
