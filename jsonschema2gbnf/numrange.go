package jsonschema2gbnf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ValidatorMaxExponent is the range of the numbers santhosh-tekuri/
// jsonschema can read. It reads every number, of the schema and of the
// document, with math/big's Rat.SetString, which refuses a decimal whose
// exponent less its fraction digits is beyond ±10^6 (unless its digits
// are all zeros). The validator then ignores such a bound (minimum:
// 1e9999999 is dropped), fails with a nil-pointer panic on such a
// multipleOf or count while checking the schema, and panics on a number
// it compares with such an enum or const value, or on such a number in
// the document wherever a numeric keyword applies to it.
//
// So the converter handles these numbers before the validator sees them:
// a bound, multipleOf, count or const beyond the range is a
// *NumberRangeError; enum values holding one are dropped, by Convert and
// CompileSchema alike (no document the validator can read equals them),
// and an enum left empty is a *NumberRangeError; the grammar never writes
// such a number (MaxExponentDigits, MaxFractionDigits); Validate reports
// one in a document as a *NumberRangeError instead of calling the
// validator.
const ValidatorMaxExponent = 1_000_000

// NumberRangeError reports a number beyond ValidatorMaxExponent, in the
// schema ("#/minimum") or in a document given to Validate ("#/items/0",
// "#" for the root): Pointer is the number's JSON pointer as a URI
// fragment.
type NumberRangeError struct {
	Pointer string
	Number  string
}

func (e *NumberRangeError) Error() string {
	n := e.Number
	if len(n) > 40 {
		n = n[:20] + "…" + n[len(n)-16:]
	}
	return fmt.Sprintf("%s: number %s is beyond the validator's range (its decimal exponent less its fraction digits must be within ±%d)", e.Pointer, n, ValidatorMaxExponent)
}

// judgeable reports whether the validator can read the JSON number s
// (big.Rat.SetString succeeds): the exponent fits an int64 and, unless
// every digit is 0, the exponent less the fraction digits is within
// ±ValidatorMaxExponent.
func judgeable(s string) bool {
	mant, exp := s, "0"
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return false
	}
	if strings.Trim(mant, "-0.") == "" {
		return true // zero: math/big skips the exponent
	}
	frac := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		frac = len(mant) - i - 1
	}
	if e < -(1<<62) || e > 1<<62 {
		return false
	}
	d := e - int64(frac)
	return d >= -ValidatorMaxExponent && d <= ValidatorMaxExponent
}

// outOfRange returns the JSON pointer (below ptr) and text of the first
// number of a raw or plain value the validator cannot read.
func outOfRange(v any, ptr string) (string, string, bool) {
	p, n, bad := outOfRangeIn(v)
	if !bad {
		return "", "", false
	}
	return ptr + p, n, true
}

// outOfRangeIn is outOfRange with the pointer relative to v ("" for v
// itself), spelled out only for the number it finds.
func outOfRangeIn(v any) (string, string, bool) {
	switch x := v.(type) {
	case json.Number:
		if !judgeable(string(x)) {
			return "", string(x), true
		}
	case *ordObj:
		for _, k := range x.keys {
			if p, n, bad := outOfRangeIn(x.vals[k]); bad {
				return "/" + escapeToken(k) + p, n, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, n, bad := outOfRangeIn(x[k]); bad {
				return "/" + escapeToken(k) + p, n, true
			}
		}
	case []any:
		for i, e := range x {
			if p, n, bad := outOfRangeIn(e); bad {
				return "/" + strconv.Itoa(i) + p, n, true
			}
		}
	}
	return "", "", false
}

// numberKeywords are the keywords whose number the validator reads.
var numberKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}

// rewriteHugeNumbers handles the numbers of a raw schema beyond the
// validator's range (see ValidatorMaxExponent): an error for a numeric
// keyword or const, enum values holding one dropped. It reports whether
// it changed the document.
func rewriteHugeNumbers(raw any) (changed bool, err error) {
	walkSchemas(raw, jsonschema.Draft2020, func(o *ordObj, ptr, _ string) {
		if err != nil {
			return
		}
		for _, k := range numberKeywords {
			if n, ok := o.vals[k].(json.Number); ok && !judgeable(string(n)) {
				err = &NumberRangeError{Pointer: "#" + ptr + "/" + k, Number: string(n)}
				return
			}
		}
		if v, ok := o.vals["const"]; ok {
			if p, n, bad := outOfRange(v, "#"+ptr+"/const"); bad {
				err = &NumberRangeError{Pointer: p, Number: n}
				return
			}
		}
		enum, ok := o.vals["enum"].([]any)
		if !ok {
			return
		}
		kept := enum[:0:0]
		var first *NumberRangeError
		for i, v := range enum {
			if p, n, bad := outOfRangeIn(v); bad {
				p = "#" + ptr + "/enum/" + strconv.Itoa(i) + p
				if first == nil {
					first = &NumberRangeError{Pointer: p, Number: n}
				}
				continue
			}
			kept = append(kept, v)
		}
		if first == nil {
			return
		}
		if len(kept) == 0 {
			err = first
			return
		}
		o.vals["enum"] = kept
		changed = true
	})
	return changed, err
}

// Validate validates a JSON document against a schema from
// CompileSchema, the way the converter's grammar is meant to be checked:
// the document must be one JSON value; a number the validator cannot
// read (ValidatorMaxExponent) is a *NumberRangeError naming its pointer,
// never a validator panic; otherwise the validator's verdict (nil or a
// *jsonschema.ValidationError). A panic of the validator on any other
// input is returned as an error, not propagated.
func Validate(s *jsonschema.Schema, doc []byte) (err error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("not JSON: data after the document")
	}
	return ValidateValue(s, v)
}

// ValidateValue is Validate for a document already decoded with
// json.Decoder.UseNumber.
func ValidateValue(s *jsonschema.Schema, v any) error {
	if p, n, bad := outOfRange(v, "#"); bad {
		return &NumberRangeError{Pointer: p, Number: n}
	}
	return validateSafe(s, v)
}
