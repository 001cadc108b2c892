// Package difffuzz is the differential fuzzer of jsonschema2gbnf: random
// small schemas from a grammar of schemas, random instances, and a check
// of the strict grammar against the validator (santhosh-tekuri/
// jsonschema, through jsonschema2gbnf.Validate): a document the grammar
// accepts and the validator rejects is a failure, and so is a sentence of
// the grammar, or a document decoded by a random walk through the token
// mask with a real vocabulary, that the validator rejects. Valid
// instances the grammar rejects (once formatted) are counted, not
// failures: the grammar may be a documented subset.
//
// It runs as the Go fuzz target FuzzDifferential (package
// jsonschema2gbnf, the seed corpus in testdata/fuzz) and as the bounded
// long-run command jsonschema2gbnf/cmd/schemafuzz.
//
// # The grammar of schemas
//
// Every choice is drawn from a Chooser (a PRNG, or the bytes of a fuzz
// input), so one input is one schema with its instances:
//
//	document  ::= [ "$schema": draft-07 | 2019-09 ]   (2020-12 without)
//	              [ "$defs": { "A": schema, "B": schema } ]   (draft-07: definitions)
//	              [ "$dynamicAnchor": "d" ]  keyword*
//	schema    ::= true | false | { keyword* }           (depth ≤ 3, ≤ 5 keywords)
//	keyword   ::= "type": type | [type, type]
//	            | "enum": [value+] | "const": value
//	            | "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum": bound
//	            | "multipleOf": 1 | 2 | 3 | 5 | 0.5 | 0.1 | 0.25
//	            | "minLength" | "maxLength": 0..4 | "pattern": pattern | "format": format
//	            | "properties": { name: schema } | "required": [name+]
//	            | "additionalProperties" | "unevaluatedProperties": schema
//	            | "patternProperties": { pattern: schema } | "propertyNames": name-schema
//	            | "minProperties" | "maxProperties": 0..3
//	            | "dependentRequired": { name: [name+] } | "dependentSchemas": { name: schema }
//	            | "items" | "contains" | "unevaluatedItems": schema | "prefixItems": [schema+]
//	            | "minContains" | "maxContains": 0..2 | "minItems" | "maxItems": 0..3
//	            | "uniqueItems": true
//	            | "allOf" | "anyOf" | "oneOf": [schema+] | "not": schema
//	            | "if": schema, "then": schema, "else": schema
//	            | "$ref": "schema.json#" | "schema.json#/$defs/A" | … | "$dynamicRef": "#d"
//	            | "$id": "rN", "$dynamicAnchor": "d"   (one anchor per resource)
//	            | draft-07/2019-09: "dependencies", "items": [schema+], "additionalItems",
//	              "$recursiveRef": "#", "$recursiveAnchor": true
//	name      ::= "a" | "b" | "c" | ""
//	type      ::= null | boolean | object | array | string | integer | number
//
// Names, patterns, bounds and values come from small pools so that the
// keywords of one schema meet: a property declared in one branch and
// required or unevaluated in another, a bound on both sides of a const.
package difffuzz

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
)

// Chooser makes the generators' choices: Intn(n) is in [0, n).
type Chooser interface{ Intn(n int) int }

// Bytes is a Chooser that reads its choices from a fuzz input: one byte
// per choice (two when n > 256), modulo n. Past the end every choice is
// 0, which the generators make the smallest option, so that generation
// ends.
type Bytes struct {
	b []byte
	i int
}

// NewBytes returns a Chooser over b.
func NewBytes(b []byte) *Bytes { return &Bytes{b: b} }

// Intn returns the next choice in [0, n).
func (c *Bytes) Intn(n int) int {
	if n <= 1 {
		return 0
	}
	v := 0
	for k := 0; k < 1+btoi(n > 256); k++ {
		if c.i < len(c.b) {
			v = v<<8 | int(c.b[c.i])
			c.i++
		}
	}
	return v % n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Seeded returns a Chooser with a PRNG seeded by seed.
func Seeded(seed int64) Chooser { return rand.New(rand.NewSource(seed)) }

// obj is a JSON object with ordered keys, as the generators build it.
type obj struct {
	keys []string
	vals map[string]any
}

func newObj() *obj { return &obj{vals: map[string]any{}} }

func (o *obj) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *obj) has(k string) bool { _, ok := o.vals[k]; return ok }

// num is a JSON number written as is.
type num string

// encode writes a generated value as compact JSON.
func encode(v any) string {
	var b strings.Builder
	enc(&b, v)
	return b.String()
}

func enc(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case num:
		b.WriteString(string(x))
	case string:
		q, _ := json.Marshal(x)
		b.Write(q)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			enc(b, e)
		}
		b.WriteByte(']')
	case *obj:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			q, _ := json.Marshal(k)
			b.Write(q)
			b.WriteByte(':')
			enc(b, x.vals[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("difffuzz: cannot encode %T", v))
	}
}

// Pools of the grammar of schemas.
var (
	names    = []string{"a", "b", "c", ""}
	patterns = []string{"^a", "b$", "^[ab]+$", "c", "^$", "^[0-9]+$"}
	formats  = []string{"email", "date", "date-time", "time", "hostname", "ipv4", "ipv6", "uuid", "uri",
		"uri-reference", "duration", "json-pointer", "relative-json-pointer", "unknown-format"}
	types   = []string{"null", "boolean", "object", "array", "string", "integer", "number"}
	bounds  = []string{"-2", "-1", "0", "0.5", "1", "2.5", "3", "10", "1e2", "-0.5", "7"}
	mults   = []string{"1", "2", "3", "5", "0.5", "0.1", "0.25"}
	strs    = []string{"", "a", "b", "ab", "ba", "abc", "c", "x", "aa", "12", "a@b.co", "2024-02-29", "12:00:00Z", "::1", "P1D", "/a~1b", "é", "\u0000"}
	numbers = []string{"0", "-0", "1", "-1", "2", "3", "0.5", "2.5", "10", "1e2", "1.0", "-0.0", "12e-1", "7", "100", "-2", "6", "1E1"}
)

// draft of a generated document.
type draft int

const (
	draft2020 draft = iota
	draft2019
	draft7
)

type schemaGen struct {
	ch      Chooser
	d       draft
	defs    bool // the root has $defs A and B
	dynamic bool // some schema declares $dynamicAnchor "d"
	inDef   bool // generating $defs A or B
	size    int  // keywords written so far
	ids     int  // sub-resources made so far
}

// docURI is the document's URI as jsonschema2gbnf compiles it: $ref
// values start with it so that they resolve from inside a sub-resource.
const docURI = "schema.json"

// dynamicAnchor makes o a schema resource of its own that declares the
// dynamic anchor "d" (one declaration per resource).
func (g *schemaGen) dynamicAnchor(o *obj) {
	if o.has("$dynamicAnchor") {
		return
	}
	g.ids++
	o.set("$id", fmt.Sprintf("r%d", g.ids))
	o.set("$dynamicAnchor", "d")
}

// maxSchemaKeywords bounds the keywords of one generated document.
const maxSchemaKeywords = 40

// Schema returns a random schema document from the grammar of schemas.
func Schema(ch Chooser) []byte {
	g := &schemaGen{ch: ch}
	switch ch.Intn(10) {
	case 8:
		g.d = draft2019
	case 9:
		g.d = draft7
	}
	g.defs = ch.Intn(3) == 0
	g.dynamic = g.d == draft2020 && ch.Intn(4) == 0
	root := newObj()
	switch g.d {
	case draft2019:
		root.set("$schema", "https://json-schema.org/draft/2019-09/schema")
	case draft7:
		root.set("$schema", "http://json-schema.org/draft-07/schema#")
	}
	if g.dynamic {
		root.set("$dynamicAnchor", "d")
	}
	g.keywords(root, 0, true)
	if g.defs {
		g.inDef = true
		defs := newObj()
		defs.set("A", g.schema(1, true))
		defs.set("B", g.schema(1, true))
		kw := "$defs"
		if g.d == draft7 {
			kw = "definitions"
		}
		root.set(kw, defs)
	}
	return []byte(encode(root))
}

// schema returns a subschema at depth d. inPlace: it applies to the
// same instance as the document root or a $defs entry (through allOf,
// not, if, …), where a $ref back to it would loop: such a $ref is not
// generated there ($ref "#" never, $defs entries only from the root's
// side, and a $defs entry never refers in place).
func (g *schemaGen) schema(depth int, inPlace bool) any {
	switch g.ch.Intn(12) {
	case 0:
		return true
	case 1:
		return false
	}
	o := newObj()
	if g.dynamic && g.ch.Intn(5) == 0 {
		g.dynamicAnchor(o)
	}
	g.keywords(o, depth, inPlace)
	return o
}

// keywords adds up to five keywords to o.
func (g *schemaGen) keywords(o *obj, depth int, inPlace bool) {
	n := 1 + g.ch.Intn(5)
	if depth >= 3 {
		n = g.ch.Intn(2)
	}
	for i := 0; i < n && g.size < maxSchemaKeywords; i++ {
		g.size++
		g.keyword(o, depth, inPlace)
	}
}

func (g *schemaGen) pick(xs []string) string { return xs[g.ch.Intn(len(xs))] }

func (g *schemaGen) sub(depth int, inPlace bool) any {
	if depth >= 3 || g.size >= maxSchemaKeywords {
		if g.ch.Intn(2) == 0 {
			return true
		}
		o := newObj()
		o.set("type", g.pick(types))
		return o
	}
	return g.schema(depth+1, inPlace)
}

func (g *schemaGen) subs(depth, max int, inPlace bool) []any {
	n := 1 + g.ch.Intn(max)
	out := make([]any, n)
	for i := range out {
		out[i] = g.sub(depth, inPlace)
	}
	return out
}

func (g *schemaGen) nameList() []any {
	n := 1 + g.ch.Intn(2)
	var out []any
	seen := map[string]bool{}
	for i := 0; i < n; i++ {
		k := g.pick(names)
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// keyword adds one keyword to o (or nothing when it is already there).
func (g *schemaGen) keyword(o *obj, depth int, inPlace bool) {
	set := func(k string, v any) {
		if !o.has(k) {
			o.set(k, v)
		}
	}
	small := func(max int) num { return num(strconv.Itoa(g.ch.Intn(max + 1))) }
	switch keywordTable[g.weighted()].name {
	case "type":
		if t1, t2 := g.pick(types), g.pick(types); t1 != t2 && g.ch.Intn(3) == 0 {
			set("type", []any{t1, t2})
		} else {
			set("type", g.pick(types))
		}
	case "enum":
		var vals []any
		seen := map[string]bool{}
		for i, n := 0, 1+g.ch.Intn(4); i < n; i++ {
			v := g.value(2)
			if k := encode(v); !seen[k] { // draft-07 wants distinct values
				seen[k] = true
				vals = append(vals, v)
			}
		}
		set("enum", vals)
	case "const":
		set("const", g.value(2))
	case "bound":
		set([]string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}[g.ch.Intn(4)], num(g.pick(bounds)))
	case "multipleOf":
		set("multipleOf", num(g.pick(mults)))
	case "length":
		set([]string{"minLength", "maxLength"}[g.ch.Intn(2)], small(4))
	case "pattern":
		set("pattern", g.pick(patterns))
	case "format":
		set("format", g.pick(formats))
	case "properties":
		props := newObj()
		for i, n := 0, 1+g.ch.Intn(3); i < n; i++ {
			props.set(g.pick(names), g.sub(depth, false))
		}
		set("properties", props)
	case "required":
		set("required", g.nameList())
	case "additionalProperties":
		set("additionalProperties", g.sub(depth, false))
	case "unevaluatedProperties":
		set("unevaluatedProperties", g.sub(depth, false))
	case "patternProperties":
		pp := newObj()
		pp.set(g.pick(patterns), g.sub(depth, false))
		set("patternProperties", pp)
	case "propertyNames":
		pn := newObj()
		switch g.ch.Intn(3) {
		case 0:
			pn.set("maxLength", small(1))
		case 1:
			pn.set("pattern", g.pick(patterns))
		default:
			pn.set("enum", g.nameList())
		}
		set("propertyNames", pn)
	case "propertyCount":
		set([]string{"minProperties", "maxProperties"}[g.ch.Intn(2)], small(3))
	case "dependentRequired":
		dr := newObj()
		dr.set(g.pick(names), g.nameList())
		kw := "dependentRequired"
		if g.d == draft7 {
			kw = "dependencies"
		}
		set(kw, dr)
	case "dependentSchemas":
		ds := newObj()
		ds.set(g.pick(names), g.sub(depth, inPlace))
		kw := "dependentSchemas"
		if g.d == draft7 {
			kw = "dependencies"
		}
		set(kw, ds)
	case "items":
		if g.d != draft2020 && g.ch.Intn(2) == 0 {
			set("items", g.subs(depth, 2, false))
			if g.ch.Intn(2) == 0 {
				set("additionalItems", g.sub(depth, false))
			}
		} else {
			set("items", g.sub(depth, false))
		}
	case "prefixItems":
		if g.d == draft2020 {
			set("prefixItems", g.subs(depth, 2, false))
		} else {
			set("items", g.subs(depth, 2, false))
		}
	case "contains":
		set("contains", g.sub(depth, false))
		if g.d != draft7 && g.ch.Intn(2) == 0 {
			set([]string{"minContains", "maxContains"}[g.ch.Intn(2)], small(2))
		}
	case "unevaluatedItems":
		set("unevaluatedItems", g.sub(depth, false))
	case "itemCount":
		set([]string{"minItems", "maxItems"}[g.ch.Intn(2)], small(3))
	case "uniqueItems":
		set("uniqueItems", true)
	case "allOf":
		set("allOf", g.subs(depth, 3, inPlace))
	case "anyOf":
		set("anyOf", g.subs(depth, 3, inPlace))
	case "oneOf":
		set("oneOf", g.subs(depth, 3, inPlace))
	case "not":
		set("not", g.sub(depth, inPlace))
	case "if":
		set("if", g.sub(depth, inPlace))
		if g.ch.Intn(4) != 0 {
			set("then", g.sub(depth, inPlace))
		}
		if g.ch.Intn(4) != 0 {
			set("else", g.sub(depth, inPlace))
		}
	case "ref":
		switch {
		case g.dynamic && g.ch.Intn(2) == 0:
			set("$dynamicRef", "#d")
		case g.d == draft2019 && !inPlace && g.ch.Intn(3) == 0:
			set("$recursiveRef", "#")
			if g.ch.Intn(2) == 0 {
				set("$recursiveAnchor", true)
			}
		case g.defs && !(inPlace && g.inDef) && (inPlace || g.ch.Intn(3) != 0):
			ref := docURI + "#/$defs/"
			if g.d == draft7 {
				ref = docURI + "#/definitions/"
			}
			set("$ref", ref+[]string{"A", "B"}[g.ch.Intn(2)])
		case !inPlace:
			set("$ref", docURI+"#")
		}
	case "dynamicAnchor":
		if g.dynamic && depth > 0 {
			g.dynamicAnchor(o)
		} else {
			set("type", g.pick(types))
		}
	}
}

// keywordTable weighs the keywords of the grammar of schemas: the
// annotation-dependent ones (unevaluated*), what they depend on
// (properties, items, the in-place applicators) and what meets them
// (required, dependentSchemas) come most often.
var keywordTable = []struct {
	name   string
	weight int
}{
	{"type", 3}, {"enum", 2}, {"const", 1}, {"bound", 2}, {"multipleOf", 1}, {"length", 1}, {"pattern", 1}, {"format", 1},
	{"properties", 5}, {"required", 3}, {"additionalProperties", 2}, {"unevaluatedProperties", 4}, {"patternProperties", 2},
	{"propertyNames", 1}, {"propertyCount", 1}, {"dependentRequired", 1}, {"dependentSchemas", 2},
	{"items", 2}, {"prefixItems", 3}, {"contains", 2}, {"unevaluatedItems", 3}, {"itemCount", 1}, {"uniqueItems", 1},
	{"allOf", 4}, {"anyOf", 3}, {"oneOf", 2}, {"not", 2}, {"if", 2}, {"ref", 2}, {"dynamicAnchor", 1},
}

var keywordWeights = func() int {
	t := 0
	for _, k := range keywordTable {
		t += k.weight
	}
	return t
}()

// weighted draws an index of keywordTable.
func (g *schemaGen) weighted() int {
	r := g.ch.Intn(keywordWeights)
	for i, k := range keywordTable {
		if r < k.weight {
			return i
		}
		r -= k.weight
	}
	return 0
}

// value returns a random JSON value from the pools, up to depth d.
func (g *schemaGen) value(d int) any {
	return randomValue(g.ch, d, names)
}

// randomValue returns a random JSON value whose strings, numbers and keys
// come from the pools (keys from keys plus a few others).
func randomValue(ch Chooser, d int, keys []string) any {
	k := 7
	if d <= 0 {
		k = 5
	}
	switch ch.Intn(k) {
	case 0:
		return nil
	case 1:
		return ch.Intn(2) == 0
	case 2:
		return num(numbers[ch.Intn(len(numbers))])
	case 3, 4:
		return strs[ch.Intn(len(strs))]
	case 5:
		n := ch.Intn(4)
		out := make([]any, n)
		for i := range out {
			out[i] = randomValue(ch, d-1, keys)
		}
		return out
	default:
		o := newObj()
		for i, n := 0, ch.Intn(4); i < n; i++ {
			var key string
			if ch.Intn(4) == 0 {
				key = []string{"x", "aa", "ab", "ba", "cc"}[ch.Intn(5)]
			} else {
				key = keys[ch.Intn(len(keys))]
			}
			o.set(key, randomValue(ch, d-1, keys))
		}
		return o
	}
}

// Instances returns n random JSON documents for a schema: values from
// the pools, with the schema's own property names, enum/const values and
// bounds mixed in.
func Instances(ch Chooser, schema []byte, n int) [][]byte {
	keys := append([]string{}, names...)
	keys = append(keys, schemaStrings(schema)...)
	sort.Strings(keys)
	keys = dedup(keys)
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, []byte(encode(randomValue(ch, 3, keys))))
	}
	return out
}

// schemaStrings returns the short string literals of a schema document
// (property names, enum values…): candidates for instance keys.
func schemaStrings(schema []byte) []string {
	var out []string
	s := string(schema)
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i+1:], '"')
		if j < 0 {
			break
		}
		w := s[i+1 : i+1+j]
		if len(w) <= 4 && !strings.ContainsAny(w, `\$`) {
			out = append(out, w)
		}
		s = s[i+j+2:]
	}
	return out
}

func dedup(xs []string) []string {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
