package jsonschema2gbnf

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand"
	"strings"
	"testing"

	"github.com/structgen/structgen/mask"
)

// judgeable must be exactly math/big's Rat.SetString, the validator's
// number reader, on JSON numbers around its exponent limit.
func TestJudgeableIsBigRat(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var cases []string
	// (math/big takes milliseconds per number near the limit: few of those)
	for _, mant := range []string{"0", "-0", "1", "-1", "12.5", "0.000", "0.001", "1.000000", "-0.0", "123456789"} {
		for _, e := range []int64{0, 1, -1, 99999, -99999, 1000001, -1000001, -1000003, 1000006, 1 << 40, -(1 << 40), 1<<63 - 1, -1 << 63} {
			cases = append(cases, fmt.Sprintf("%se%d", mant, e), fmt.Sprintf("%sE+%d", mant, e))
		}
	}
	cases = append(cases, "1e1000000", "1e-1000000", "1.5e1000001", "12.5e-999998", "0.001e-999997", "0.001e-999998",
		"1e99999999999999999999", "0e99999999999999999999", "1", "-2.5", "1e-9223372036854775808")
	for i := 0; i < 300; i++ {
		cases = append(cases, fmt.Sprintf("%d.%se%d", rng.Intn(100), strings.Repeat("7", rng.Intn(5)), int64(rng.Intn(8000))-4000+[]int64{1000000, -1000000}[i%2]*int64(btoi(i%25 == 0))))
	}
	for _, s := range cases {
		_, want := new(big.Rat).SetString(s)
		if got := judgeable(s); got != want {
			t.Errorf("judgeable(%q) = %v, big.Rat.SetString says %v", s, got, want)
		}
	}
}

// llamaMaxRepetition is llama.cpp's limit on a counted repetition's
// bounds (MAX_REPETITION_THRESHOLD in llama-grammar.cpp): the shared
// number rules every numeric grammar uses must stay below it, or
// llama.cpp rejects the grammar text.
const llamaMaxRepetition = 2000

// The grammar's number domain stays within the validator's range, and
// its rules within llama.cpp's.
func TestNumberDomainWithinValidator(t *testing.T) {
	if fracTail > llamaMaxRepetition || MaxExponentDigits > llamaMaxRepetition {
		t.Errorf("the number rules repeat up to %d times, llama.cpp at most %d", fracTail, llamaMaxRepetition)
	}
	maxExp := 1
	for i := 0; i < MaxExponentDigits; i++ {
		maxExp *= 10
	}
	if maxExp-1+MaxFractionDigits > ValidatorMaxExponent {
		t.Errorf("an exponent of %d digits and %d fraction digits can leave the validator's range ±%d", MaxExponentDigits, MaxFractionDigits, ValidatorMaxExponent)
	}
}

// Long fractions through the mask automaton (a byte-level vocabulary):
// a fraction of fracTail digits is accepted where the grammar has a
// free run, one of more than MaxFractionDigits never is.
func TestFractionBound(t *testing.T) {
	toks := make([][]byte, 256)
	for i := range toks {
		toks[i] = []byte{byte(i)}
	}
	v, err := mask.NewVocab(toks, nil)
	if err != nil {
		t.Fatal(err)
	}
	digits := func(n int) string { return strings.Repeat("7", n) }
	zeros := func(n int) string { return strings.Repeat("0", n) }
	for _, tc := range []struct {
		schema   string
		accept   []string
		rejected []string
	}{
		{`{"type":"number"}`,
			[]string{"1." + digits(fracTail), "-0." + digits(fracTail+1) + "e-99999"},
			[]string{"1." + digits(fracTail+2), "1e123456", "1e-000001"}},
		{`{"type":"number","exclusiveMinimum":0}`,
			[]string{"0." + zeros(fracTail) + "1" + digits(fracTail), "3." + digits(fracTail+1) + "E+5"},
			[]string{"0." + zeros(fracTail) + "1" + digits(fracTail+1), "0"}},
		{`{"type":"number","minimum":0.5,"maximum":2}`,
			[]string{"0.5" + digits(fracTail), "1." + digits(fracTail+1), "2." + zeros(fracTail+1)},
			[]string{"0.5" + digits(MaxFractionDigits), "1." + digits(fracTail+2), "2." + zeros(fracTail+2)}},
	} {
		src, g := compileGrammar(t, tc.schema)
		c, err := mask.Compile(g, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, docs := range [][]string{tc.accept, tc.rejected} {
			for _, doc := range docs {
				m := c.NewMatcher()
				ok := m.AcceptBytes([]byte(doc)) == nil && m.CanEnd()
				if want := &docs[0] == &tc.accept[0]; ok != want {
					t.Errorf("%s: accepts a %d-byte number %.12s… = %v, want %v\n%s", tc.schema, len(doc), doc, ok, want, src)
				}
				if ok && !judgeable(doc) {
					t.Errorf("%s: accepts %.12s…, which the validator cannot read", tc.schema, doc)
				}
			}
		}
	}
}

// Numbers of the schema beyond the validator's range: errors naming the
// keyword's pointer, enum values dropped (for CompileSchema too).
func TestSchemaNumbersBeyondValidator(t *testing.T) {
	for _, tc := range []struct{ schema, ptr string }{
		{`{"type":"number","minimum":1e9999999}`, "#/minimum"},
		{`{"properties":{"a":{"exclusiveMaximum":-1e-1000001}}}`, "#/properties/a/exclusiveMaximum"},
		{`{"multipleOf":1e99999999}`, "#/multipleOf"},
		{`{"items":{"maxLength":1e9999999}}`, "#/items/maxLength"},
		{`{"const":{"a":[1,2e-9999999]}}`, "#/const/a/1"},
		{`{"anyOf":[{"enum":[1e99999999,[5e-99999999]]}]}`, "#/anyOf/0/enum/0"},
		{`{"properties":{"a~/":{"enum":[{"b/":[1,2e-9999999]}]}}}`, "#/properties/a~0~1/enum/0/b~1/1"},
	} {
		for _, f := range []func([]byte) error{
			func(b []byte) error { _, err := Convert(b); return err },
			func(b []byte) error { _, err := CompileSchema(b); return err },
		} {
			err := f([]byte(tc.schema))
			var ne *NumberRangeError
			if !errors.As(err, &ne) || ne.Pointer != tc.ptr || !strings.Contains(err.Error(), "beyond the validator's range") {
				t.Errorf("%s: error %v, want a NumberRangeError at %s", tc.schema, err, tc.ptr)
			}
		}
	}
	// enum values beyond the range are dropped, for the validator too
	const schema = `{"enum":[1e99999999,2,{"x":3e-9999999}],"type":["integer","object"]}`
	judge, err := CompileSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(judge, []byte("2")); err != nil {
		t.Errorf("the validator rejects 2: %v", err)
	}
	_, g := compileGrammar(t, schema)
	checkSound(t, schema, g, 10, 1, 100)
}

func TestValidate(t *testing.T) {
	judge, err := CompileSchema([]byte(`{"type":"array","items":{"type":"number","minimum":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ doc, want string }{
		{`[1,2.5e3]`, ""},
		{`[1,-2]`, "minimum"},
		{`[1,{"a":[0,-6e594566878581616037431958506826]}]`, "#/1/a/1: number -6e594566878581616037431958506826 is beyond the validator's range"},
		{`1e99999999`, "#: number 1e99999999 is beyond"},
		{`[1] 2`, "data after the document"},
		{`[1`, "not JSON"},
	} {
		err := Validate(judge, []byte(tc.doc))
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%s) = %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
