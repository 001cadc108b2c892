package jsonschema2gbnf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Format rewrites a JSON document the way the grammar Convert writes for
// the same schema and options expects it: declared properties in schema
// order followed by the other keys in document order; strings in the
// canonical encoding (see the package documentation); numbers as the
// number grammar at their place writes them (an integer in canonical
// form where only integers are allowed, from draft 6 on; a plain decimal
// for an exponent), an enum or const value as the schema spells it;
// compact, or with FlexibleWhitespace indented by two spaces per level
// (capped at the option's maximum indentation). A document valid against
// the schema, once formatted, is accepted by the grammar whenever the
// grammar is exact for that schema (the corpus tests check this).
//
// Where the schema has alternatives (anyOf, oneOf, …) the first one the
// document satisfies decides the key order. Format does not validate; a
// document the schema rejects is formatted by the parts that apply.
func Format(schema, doc []byte, opts ...Option) ([]byte, error) {
	o, err := applyOptions(opts)
	if err != nil {
		return nil, err
	}
	l, err := load(schema)
	if err != nil {
		return nil, err
	}
	v, err := parseOrdered(doc)
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	o.lenient = true // formatting never fails on unsupported keywords
	o.warnings = nil
	c := newConv(l, o)
	if err := c.staticRefs(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	c.format(&b, term{ms: []*jsonschema.Schema{l.schema}}, v, 0, 0)
	return b.Bytes(), nil
}

// MaxFormatDepth bounds the recursion of Format over schema alternatives
// that do not consume the document (a $ref cycle through anyOf).
const maxFormatSteps = 1 << 20

func (c *conv) format(b *bytes.Buffer, t term, v any, depth, steps int) {
	if steps > 64 {
		writeValue(b, v, c.o, depth)
		return
	}
	f := c.flatten(t)
	plain := toPlain(v)
	for _, a := range f.atoms {
		if a.Enum != nil || a.Constant != nil {
			// write the schema's own spelling of the equal value (its key order)
			raw, ok := c.l.rawAt(a)
			if ok {
				var cands []any
				if cv, ok := raw.vals["const"]; ok && a.Constant != nil {
					cands = []any{cv}
				} else if arr, ok := raw.vals["enum"].([]any); ok {
					cands = arr
				}
				for _, cand := range cands {
					if sameValue(toPlain(cand), plain) {
						writeValue(b, cand, c.o, depth)
						return
					}
				}
			}
			writeValue(b, v, c.o, depth)
			return
		}
	}
	if len(f.groups) > 0 {
		g := f.groups[0]
		for _, br := range g.branches {
			if nt := t.expand(g, br); c.valueOK(plain, nt) {
				c.format(b, nt, v, depth, steps+1)
				return
			}
		}
		// no branch fits: use the first
		if len(g.branches) > 0 {
			c.format(b, t.expand(g, g.branches[0]), v, depth, steps+1)
			return
		}
	}
	n := c.merge(f.atoms, t)
	switch x := v.(type) {
	case *ordObj:
		parts := c.objParts(n)
		names, _ := c.objectNames(n, parts)
		propNames := propertyNamesOf(n)
		var keys []string
		seen := map[string]bool{}
		for _, k := range names {
			if _, ok := x.vals[k]; ok {
				keys = append(keys, k)
				seen[k] = true
			}
		}
		for _, k := range x.keys {
			if !seen[k] {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			c.newline(b, depth+1)
			b.WriteString(encodeJSONString(k))
			b.WriteByte(':')
			if c.o.flexible {
				b.WriteByte(' ')
			}
			var vt term
			var ok bool
			if seen[k] {
				vt, ok = c.declaredTerm(n, parts, propNames, k)
			} else {
				vt, ok = c.freeTerm(n, parts, k)
			}
			if !ok || (len(vt.ms) == 0 && vt.ex.isEmpty()) {
				writeValue(b, x.vals[k], c.o, depth+1)
			} else {
				c.format(b, vt, x.vals[k], depth+1, 0)
			}
		}
		c.newline(b, depth)
		b.WriteByte('}')
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		var parts []arrPart
		for _, a := range n.atoms {
			parts = append(parts, arrPartOf(a))
		}
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			c.newline(b, depth+1)
			var it term
			for _, p := range parts {
				if i < len(p.prefix) {
					it.ms = append(it.ms, p.prefix[i])
				} else if s, ok := p.rest.(*jsonschema.Schema); ok {
					it.ms = append(it.ms, s)
				}
			}
			if len(it.ms) == 0 {
				writeValue(b, item, c.o, depth+1)
			} else {
				c.format(b, it, item, depth+1, 0)
			}
		}
		c.newline(b, depth)
		b.WriteByte(']')
	case json.Number:
		b.WriteString(numberSpelling(n, string(x), c.l.draft != jsonschema.Draft4))
	default:
		writeValue(b, v, c.o, depth)
	}
}

// numberSpelling writes a number the way the number grammar of n expects
// it: an integer value in canonical form where only integers are allowed
// (type integer, or an integer multipleOf; only when intValues: draft 4
// counts 1.0 as no integer), and a plain decimal instead of an exponent
// (bounded and decimal grammars have no exponent; the others accept
// plain decimals too) unless it would have over MaxBoundDigits digits.
// Other spellings are kept.
func numberSpelling(n *node, s string, intValues bool) string {
	if !judgeable(s) {
		return s
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	intOnly := n.types&tNum == 0
	for _, m := range n.mults {
		intOnly = intOnly || (m.Sign() > 0 && m.IsInt())
	}
	if r.IsInt() && intOnly && s != "-0" { // "-0" is accepted as written
		if !intValues && strings.ContainsAny(s, ".eE") {
			return s
		}
		return r.Num().String()
	}
	if !strings.ContainsAny(s, "eE") || (!intValues && intOnly) {
		return s
	}
	ip, frac, ok := decimalDigits(r)
	if !ok {
		return s
	}
	out := ip.String()
	if frac != "" {
		out += "." + frac
	}
	if r.Sign() < 0 {
		out = "-" + out
	}
	return out
}

// sameValue reports JSON equality of two plain values, numbers by value
// (as the validator compares enum and const).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameValue(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	xs, xn := asNumber(a)
	ys, yn := asNumber(b)
	if xn || yn {
		if !xn || !yn || !judgeable(xs) || !judgeable(ys) {
			return false
		}
		xr, _ := new(big.Rat).SetString(xs)
		yr, _ := new(big.Rat).SetString(ys)
		return xr.Cmp(yr) == 0
	}
	return canonicalJSON(a) == canonicalJSON(b)
}

// freeTerm is the term for a key that is not declared.
func (c *conv) freeTerm(n *node, parts []objPart, k string) (term, bool) {
	t := term{}
	anyPattern := false
	explicit := false
	for _, p := range parts {
		matched := false
		for _, pp := range p.patterns {
			if pp.re.MatchString(k) {
				t.ms = append(t.ms, pp.s)
				matched = true
				anyPattern = true
			}
		}
		if !matched {
			switch ad := p.additional.(type) {
			case bool:
				return term{}, false
			case *jsonschema.Schema:
				t.ms = append(t.ms, ad)
				explicit = true
			}
		}
	}
	if !anyPattern && !explicit && c.o.noAdditional {
		return term{}, false
	}
	ok := addUnevaluated(&t, n.unevP, func(us unevScope) bool { return us.evaluatesKey(k) }, false)
	return t, ok
}

func (c *conv) newline(b *bytes.Buffer, depth int) {
	if !c.o.flexible {
		return
	}
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", min(2*depth, c.o.maxIndent)))
}

// writeValue writes a value without a schema: canonical strings, key
// order as in the document.
func writeValue(b *bytes.Buffer, v any, o options, depth int) {
	nl := func(d int) {
		if o.flexible {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", min(2*d, o.maxIndent)))
		}
	}
	switch x := v.(type) {
	case *ordObj:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			b.WriteString(encodeJSONString(k))
			b.WriteByte(':')
			if o.flexible {
				b.WriteByte(' ')
			}
			writeValue(b, x.vals[k], o, depth+1)
		}
		nl(depth)
		b.WriteByte('}')
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			writeValue(b, item, o, depth+1)
		}
		nl(depth)
		b.WriteByte(']')
	default:
		b.WriteString(canonicalJSON(v))
	}
}
