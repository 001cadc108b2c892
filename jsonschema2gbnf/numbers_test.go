package jsonschema2gbnf

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/earley"
)

// randDecimal writes a plain decimal (canonical integer part, optional
// fraction) near the interesting magnitudes.
func randDecimal(rng *rand.Rand, frac bool) string {
	var b strings.Builder
	if rng.Intn(3) == 0 {
		b.WriteByte('-')
	}
	switch rng.Intn(4) {
	case 0:
		b.WriteString(fmt.Sprint(rng.Intn(10)))
	case 1:
		b.WriteString(fmt.Sprint(rng.Intn(300)))
	case 2:
		b.WriteString(fmt.Sprint(rng.Intn(100000)))
	default:
		b.WriteString(fmt.Sprint(rng.Int63()))
	}
	if frac && rng.Intn(2) == 0 {
		b.WriteByte('.')
		for i, n := 0, 1+rng.Intn(4); i < n; i++ {
			b.WriteByte(byte('0' + rng.Intn(10)))
		}
	}
	return b.String()
}

// Range grammars accept a plain decimal exactly when the validator does.
func TestNumericRangesCrossCheck(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	for iter := 0; iter < 60; iter++ {
		typ := "integer"
		if iter%2 == 1 {
			typ = "number"
		}
		var kw []string
		kw = append(kw, fmt.Sprintf(`"type":%q`, typ))
		if rng.Intn(4) != 0 {
			k := []string{"minimum", "exclusiveMinimum"}[rng.Intn(2)]
			kw = append(kw, fmt.Sprintf(`%q:%s`, k, randDecimal(rng, typ == "number")))
		}
		if rng.Intn(4) != 0 {
			k := []string{"maximum", "exclusiveMaximum"}[rng.Intn(2)]
			kw = append(kw, fmt.Sprintf(`%q:%s`, k, randDecimal(rng, typ == "number")))
		}
		switch rng.Intn(5) {
		case 0:
			kw = append(kw, `"multipleOf":0.01`)
		case 1:
			kw = append(kw, `"not":{"const":0}`)
		}
		schema := "{" + strings.Join(kw, ",") + "}"
		src, err := Convert([]byte(schema))
		if err != nil {
			var ue *UnsatisfiableError
			if errorsAs(err, &ue) {
				continue
			}
			if strings.Contains(err.Error(), "unsupported") {
				continue
			}
			t.Fatalf("%s: %v", schema, err)
		}
		g := mustParse(t, src)
		r := earley.New(g)
		sch, _ := CompileSchema([]byte(schema))
		for i := 0; i < 300; i++ {
			s := randDecimal(rng, typ == "number")
			v, _ := decodeJSON([]byte(s))
			valid := sch.Validate(v) == nil
			if got := r.Accepts([]byte(s)); got != valid {
				t.Fatalf("%s: %s accepted=%v valid=%v\n%s", schema, s, got, valid, src)
			}
		}
	}
}
