package nomodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Schema is a JSON Schema prepared for realistic sampling: the compiled
// schema (santhosh-tekuri, as jsonschema2gbnf.CompileSchema compiles it)
// plus what the compiled form leaves out and the sampler needs for each
// subschema: the declaration order of its properties (the order the
// grammar writes them in), its annotations (title, description, examples,
// default) and its parsed patterns. A Schema is immutable and safe for
// concurrent use; prepare it once per schema (PrepareSchema walks every
// subschema once).
type Schema struct {
	root *jsonschema.Schema
	info map[*jsonschema.Schema]*schemaInfo
	pats map[*regexp.Regexp]*syntax.Regexp // parsed patterns (nil: not usable)
}

// schemaInfo is what the sampler needs of one subschema beyond the
// compiled form.
type schemaInfo struct {
	order    []string // property names in declaration order
	title    string
	desc     string
	examples []any // the "examples" values, then "default" (decoded, objects ordered)
	nExample int   // how many of examples come from "examples" (the rest is the default)
	enum     []any // "enum", or "const" as one value, with objects in document order
	hasEnum  bool
}

// PrepareSchema prepares a compiled schema for sampling. raw is the
// schema text it was compiled from (annotations and property order are
// read from it at each subschema's location).
func PrepareSchema(compiled *jsonschema.Schema, raw []byte) (*Schema, error) {
	if compiled == nil {
		return nil, errors.New("nomodel: PrepareSchema: nil schema")
	}
	doc, err := decodeOrdered(raw)
	if err != nil {
		return nil, fmt.Errorf("nomodel: PrepareSchema: %w", err)
	}
	s := &Schema{root: compiled, info: map[*jsonschema.Schema]*schemaInfo{}, pats: map[*regexp.Regexp]*syntax.Regexp{}}
	var visit func(*jsonschema.Schema)
	visit = func(n *jsonschema.Schema) {
		if n == nil {
			return
		}
		if _, ok := s.info[n]; ok {
			return
		}
		in := &schemaInfo{}
		s.info[n] = in
		if node, ok := rawAt(doc, n.Location).(*object); ok {
			in.fill(node)
		}
		if n.Pattern != nil {
			s.parsePattern(n.Pattern)
		}
		for re := range n.PatternProperties {
			s.parsePattern(re)
		}
		forEachChild(n, visit)
	}
	visit(compiled)
	return s, nil
}

func (s *Schema) parsePattern(re *regexp.Regexp) {
	if _, ok := s.pats[re]; ok {
		return
	}
	p, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		s.pats[re] = nil
		return
	}
	s.pats[re] = p // not simplified: Simplify unrolls counted repetitions
}

func (in *schemaInfo) fill(o *object) {
	in.title, _ = o.get("title").(string)
	in.desc, _ = o.get("description").(string)
	if props, ok := o.get("properties").(*object); ok {
		in.order = props.keys
	}
	if ex, ok := o.get("examples").([]any); ok {
		in.examples = append(in.examples, ex...)
	}
	in.nExample = len(in.examples)
	if i := o.index("const"); i >= 0 {
		in.enum, in.hasEnum = o.vals[i:i+1], true
	} else if e, ok := o.get("enum").([]any); ok {
		in.enum, in.hasEnum = e, true
	}
	if i := o.index("default"); i >= 0 {
		in.examples = append(in.examples, o.vals[i])
	}
}

// forEachChild calls fn for every subschema n refers to.
func forEachChild(n *jsonschema.Schema, fn func(*jsonschema.Schema)) {
	for _, c := range []*jsonschema.Schema{n.Ref, n.RecursiveRef, n.DynamicRef, n.Not, n.If, n.Then, n.Else,
		n.PropertyNames, n.UnevaluatedProperties, n.Items2020, n.Contains, n.UnevaluatedItems, n.ContentSchema} {
		fn(c)
	}
	for _, l := range [][]*jsonschema.Schema{n.AllOf, n.AnyOf, n.OneOf, n.PrefixItems} {
		for _, c := range l {
			fn(c)
		}
	}
	for _, c := range n.Properties {
		fn(c)
	}
	for _, c := range n.PatternProperties {
		fn(c)
	}
	for _, c := range n.DependentSchemas {
		fn(c)
	}
	for _, d := range n.Dependencies {
		if c, ok := d.(*jsonschema.Schema); ok {
			fn(c)
		}
	}
	for _, x := range []any{n.AdditionalProperties, n.Items, n.AdditionalItems} {
		switch x := x.(type) {
		case *jsonschema.Schema:
			fn(x)
		case []*jsonschema.Schema:
			for _, c := range x {
				fn(c)
			}
		}
	}
}

// object is a decoded JSON object that keeps its keys in document order.
type object struct {
	keys []string
	vals []any
}

func (o *object) index(k string) int {
	for i, kk := range o.keys {
		if kk == k {
			return i
		}
	}
	return -1
}

func (o *object) get(k string) any {
	if i := o.index(k); i >= 0 {
		return o.vals[i]
	}
	return nil
}

// maxRawDepth bounds the nesting of the schema text decodeOrdered reads;
// jsonschema2gbnf rejects deeper schemas (MaxNestingDepth, 200) before
// this is reached.
const maxRawDepth = 256

// decodeOrdered decodes JSON with objects as *object and numbers as
// json.Number.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var val func(depth int) (any, error)
	val = func(depth int) (any, error) {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			return tok, nil
		}
		if depth > maxRawDepth {
			return nil, errors.New("schema nested too deeply")
		}
		if d == '[' {
			arr := []any{}
			for dec.More() {
				v, err := val(depth + 1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		o := &object{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := val(depth + 1)
			if err != nil {
				return nil, err
			}
			ks, _ := k.(string)
			if i := o.index(ks); i >= 0 {
				o.vals[i] = v // the last one wins, as in encoding/json
				continue
			}
			o.keys, o.vals = append(o.keys, ks), append(o.vals, v)
		}
		_, err = dec.Token()
		return o, err
	}
	v, err := val(0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the schema")
	}
	return v, nil
}

// rawAt returns the node of the schema document at a compiled schema's
// location (its URI fragment is a JSON pointer into the document), or nil.
func rawAt(doc any, loc string) any {
	i := strings.IndexByte(loc, '#')
	if i < 0 {
		return doc
	}
	frag, err := url.PathUnescape(loc[i+1:])
	if err != nil || (frag != "" && frag[0] != '/') {
		return nil
	}
	cur := doc
	for frag != "" {
		frag = frag[1:]
		tok := frag
		if j := strings.IndexByte(frag, '/'); j >= 0 {
			tok, frag = frag[:j], frag[j:]
		} else {
			frag = ""
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case *object:
			cur = c.get(tok)
		case []any:
			var k int
			if _, err := fmt.Sscan(tok, &k); err != nil || k < 0 || k >= len(c) {
				return nil
			}
			cur = c[k]
		default:
			return nil
		}
	}
	return cur
}

// JSON types as a bit set.
type typeSet uint8

const (
	tObject typeSet = 1 << iota
	tArray
	tString
	tNumber
	tInteger // integers only (a number without fraction)
	tBoolean
	tNull
	tAny = tObject | tArray | tString | tNumber | tInteger | tBoolean | tNull
)

func typeBit(name string) typeSet {
	switch name {
	case "object":
		return tObject
	case "array":
		return tArray
	case "string":
		return tString
	case "number":
		return tNumber | tInteger
	case "integer":
		return tInteger
	case "boolean":
		return tBoolean
	case "null":
		return tNull
	}
	return 0
}

// view merges what a value's subschemas say (after $ref, allOf and a
// chosen branch of each anyOf and oneOf) into the facts the generators
// use. The grammar, not the view, decides validity: a view only steers
// choices, so it may be approximate (if/then/else, not and dependencies
// are left to the grammar).
type view struct {
	types    typeSet
	facets   typeSet // the types whose keywords the schemas use
	enum     []any
	hasEnum  bool
	examples []any
	nExample int

	props     []propView
	required  []string
	patProps  []patProp
	addl      []*jsonschema.Schema
	noAddl    bool
	propNames []*jsonschema.Schema
	maxProps  int

	prefix   [][]*jsonschema.Schema
	items    []*jsonschema.Schema
	contains []*jsonschema.Schema
	minItems int
	maxItems int

	format   string
	patterns []pattern
	minLen   int
	maxLen   int

	min, max         *big.Rat
	exclMin, exclMax bool
	multipleOf       *big.Rat

	title, desc string
}

type propView struct {
	name    string
	schemas []*jsonschema.Schema
}

type pattern struct {
	re  *regexp.Regexp
	syn *syntax.Regexp
}

type patProp struct {
	re     *regexp.Regexp
	syn    *syntax.Regexp
	schema *jsonschema.Schema
}

// maxViewSchemas bounds the subschemas merged into one view (a $ref
// chain or allOf tree of more is cut there: the view only steers).
const maxViewSchemas = 64

func (v *view) reset() {
	*v = view{types: tAny, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, maxProps: -1,
		props: v.props[:0], required: v.required[:0], patProps: v.patProps[:0], addl: v.addl[:0],
		propNames: v.propNames[:0], prefix: v.prefix[:0], items: v.items[:0], contains: v.contains[:0],
		patterns: v.patterns[:0]}
}

// build fills v from the schemas of one value, choosing one branch of
// each anyOf and oneOf with pick (uniform: pick(n) returns 0..n-1).
func (v *view) build(sch *Schema, ss []*jsonschema.Schema, pick func(int) int) {
	v.reset()
	n := 0
	var add func(s *jsonschema.Schema)
	add = func(s *jsonschema.Schema) {
		if s == nil || n >= maxViewSchemas {
			return
		}
		n++
		if s.Always != nil && !*s.Always {
			v.types = 0
		}
		v.facets |= facetsOf(s)
		if len(s.Types) > 0 {
			var t typeSet
			for _, name := range s.Types {
				t |= typeBit(name)
			}
			v.types &= t
		}
		in := sch.info[s]
		switch {
		case in != nil && in.hasEnum && (s.Constant != nil || len(s.Enum) == len(in.enum)):
			v.enum, v.hasEnum = in.enum, true // document order and spelling
		case in != nil && in.hasEnum && len(s.Enum) == len(in.enum)+1:
			// OpenAPI nullable: true added null to the compiled enum
			v.enum, v.hasEnum = append(in.enum[:len(in.enum):len(in.enum)], nil), true
		case s.Constant != nil:
			v.enum, v.hasEnum = s.Constant[:1], true
		case s.Enum != nil && !v.hasEnum:
			v.enum, v.hasEnum = s.Enum, true
		}
		if in != nil {
			if v.title == "" {
				v.title, v.desc = in.title, in.desc
			}
			if len(in.examples) > 0 && len(v.examples) == 0 {
				v.examples, v.nExample = in.examples, in.nExample
			}
			v.addProps(s, in.order)
		} else {
			v.addProps(s, nil)
		}
		v.required = append(v.required, s.Required...)
		for re, ps := range s.PatternProperties {
			v.patProps = append(v.patProps, patProp{re, sch.pats[re], ps})
		}
		switch a := s.AdditionalProperties.(type) {
		case bool:
			v.noAddl = v.noAddl || !a
		case *jsonschema.Schema:
			v.addl = append(v.addl, a)
		}
		if s.PropertyNames != nil {
			v.propNames = append(v.propNames, s.PropertyNames)
		}
		v.maxProps = minBound(v.maxProps, s.MaxProperties)
		switch it := s.Items.(type) {
		case *jsonschema.Schema:
			v.items = append(v.items, it)
		case []*jsonschema.Schema:
			v.addPrefix(it)
			if ai, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				v.items = append(v.items, ai)
			}
		}
		v.addPrefix(s.PrefixItems)
		if s.Items2020 != nil {
			v.items = append(v.items, s.Items2020)
		}
		if s.Contains != nil && s.MinContains > 0 {
			v.contains = append(v.contains, s.Contains)
		}
		v.minItems = max(v.minItems, s.MinItems)
		v.maxItems = minBound(v.maxItems, s.MaxItems)
		if s.Format != "" && v.format == "" {
			v.format = s.Format
		}
		if s.Pattern != nil {
			if p := sch.pats[s.Pattern]; p != nil {
				v.patterns = append(v.patterns, pattern{s.Pattern, p})
			}
		}
		v.minLen = max(v.minLen, s.MinLength)
		v.maxLen = minBound(v.maxLen, s.MaxLength)
		v.addBounds(s)
		add(s.Ref)
		add(s.RecursiveRef)
		add(s.DynamicRef)
		for _, c := range s.AllOf {
			add(c)
		}
		if len(s.AnyOf) > 0 {
			add(s.AnyOf[pick(len(s.AnyOf))])
		}
		if len(s.OneOf) > 0 {
			add(s.OneOf[pick(len(s.OneOf))])
		}
	}
	for _, s := range ss {
		add(s)
	}
	if v.types == tAny && v.facets != 0 {
		// No type, but keywords of one kind ("properties" without
		// "type": object): take the schema as that kind.
		v.types = v.facets
	}
}

// facetsOf returns the types whose keywords s uses.
func facetsOf(s *jsonschema.Schema) typeSet {
	var t typeSet
	if len(s.Properties) > 0 || len(s.Required) > 0 || len(s.PatternProperties) > 0 || s.PropertyNames != nil ||
		s.MinProperties >= 0 || s.MaxProperties >= 0 || s.AdditionalProperties != nil {
		t |= tObject
	}
	if s.Items != nil || len(s.PrefixItems) > 0 || s.Items2020 != nil || s.Contains != nil || s.MinItems >= 0 || s.MaxItems >= 0 {
		t |= tArray
	}
	if s.Pattern != nil || s.MinLength >= 0 || s.MaxLength >= 0 || formatGen(s.Format) != genNone {
		t |= tString
	}
	if s.Minimum != nil || s.Maximum != nil || s.ExclusiveMinimum != nil || s.ExclusiveMaximum != nil || s.MultipleOf != nil {
		t |= tNumber | tInteger
	}
	return t
}

func (v *view) addProps(s *jsonschema.Schema, order []string) {
	if len(s.Properties) == 0 {
		return
	}
	seen := 0
	for _, name := range order {
		if ps, ok := s.Properties[name]; ok {
			v.addProp(name, ps)
			seen++
		}
	}
	if seen < len(s.Properties) {
		// Without the document order (a schema outside the document):
		// the grammar decides; the sampler tries them in any order.
		for name, ps := range s.Properties {
			if !containsStr(order, name) {
				v.addProp(name, ps)
			}
		}
	}
}

func (v *view) addProp(name string, s *jsonschema.Schema) {
	for i := range v.props {
		if v.props[i].name == name {
			v.props[i].schemas = append(v.props[i].schemas, s)
			return
		}
	}
	v.props = append(v.props, propView{name, []*jsonschema.Schema{s}})
}

func (v *view) addPrefix(ps []*jsonschema.Schema) {
	for i, s := range ps {
		if i < len(v.prefix) {
			v.prefix[i] = append(v.prefix[i], s)
		} else {
			v.prefix = append(v.prefix, []*jsonschema.Schema{s})
		}
	}
}

func (v *view) addBounds(s *jsonschema.Schema) {
	if r := s.Minimum; r != nil && (v.min == nil || r.Cmp(v.min) > 0) {
		v.min, v.exclMin = r, false
	}
	if r := s.ExclusiveMinimum; r != nil && (v.min == nil || r.Cmp(v.min) >= 0) {
		v.min, v.exclMin = r, true
	}
	if r := s.Maximum; r != nil && (v.max == nil || r.Cmp(v.max) < 0) {
		v.max, v.exclMax = r, false
	}
	if r := s.ExclusiveMaximum; r != nil && (v.max == nil || r.Cmp(v.max) <= 0) {
		v.max, v.exclMax = r, true
	}
	if s.MultipleOf != nil && v.multipleOf == nil {
		v.multipleOf = s.MultipleOf
	}
}

func (v *view) isRequired(name string) bool { return containsStr(v.required, name) }

// minBound combines two upper bounds where -1 means none.
func minBound(a, b int) int {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

func containsStr(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
