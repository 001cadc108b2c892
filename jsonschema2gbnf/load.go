package jsonschema2gbnf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp/syntax"
	"strconv"
	"strings"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/internal/jsonscan"
	"github.com/structgen/structgen/internal/valerr"
)

// Limits on the input. Each guards against a schema that would make the
// converter (or the santhosh-tekuri compiler it calls) use unbounded time
// or memory.
const (
	// MaxSchemaBytes bounds the schema text. The largest schema of the
	// JSONSchemaBench corpus is about 1 MB; 8 MB leaves room while keeping
	// the parse well under a second.
	MaxSchemaBytes = 8 << 20

	// MaxNestingDepth bounds the nesting of JSON arrays and objects in the
	// schema document. Real schemas nest below 40; the limit keeps the
	// recursive compiler and walker far from stack exhaustion.
	MaxNestingDepth = 200

	// MaxSubschemas bounds the subschemas of a document (every object or
	// boolean in a schema position: under properties, items, allOf, $defs,
	// …), checked on the raw JSON before santhosh-tekuri/jsonschema sees
	// it. The largest JSONSchemaBench schema has 8,416 (cityjson, draft-07);
	// 16,384 empty properties compile in about 2 s under draft-07.
	MaxSubschemas = 16384

	// MaxSubschemas2020 is MaxSubschemas for documents compiled under
	// draft 2020-12's rules (the default when $schema is absent):
	// santhosh-tekuri's dynamic-anchor pass lists every subschema once per
	// subschema, so its time is quadratic — 4,096 subschemas take about
	// 0.6 s, 10,000 take 4.4 s and 100,000 over a minute. The largest
	// 2020-12 schema of JSONSchemaBench has 843. A 2020-12 document that
	// reads the same under draft 2019-09 is compiled under its rules (see
	// sameAs2019), without that pass, and MaxSubschemas bounds it; one that
	// does not and needs more can name an older draft in $schema.
	MaxSubschemas2020 = 4096

	// MaxNumberLength bounds the text of one JSON number in the schema
	// (the longest in JSONSchemaBench has 22 characters): the validator
	// reads every number as an exact rational.
	MaxNumberLength = 1000

	// MaxExponentSum bounds the sum, over the numbers of the schema the
	// validator reads (those within ValidatorMaxExponent; the others are
	// errors or dropped enum values), of their decimal exponents'
	// magnitudes: reading 1e999999 builds a 3-million-bit integer (about
	// 40 ms), so a hundred of them took 7 s before this limit. The
	// largest in JSONSchemaBench is below 400.
	MaxExponentSum = 1_000_000

	// MaxProperties bounds the names one properties keyword declares.
	// Each declared property has its own continuation in the grammar (and
	// free keys must exclude every name), so the automaton grows with
	// them: 4,000 properties compile against Llama-3 to about 78,000
	// states in 2 s, 10,000 exceed mask.MaxStates after 5 s. The largest
	// object of JSONSchemaBench declares 412.
	MaxProperties = 4096
)

// checkStructure applies the limits that hold whatever the draft to the
// raw document: number sizes, MaxSubschemas and MaxProperties. It runs
// before the document reaches santhosh-tekuri/jsonschema, whose
// compilation time grows faster than the document. It returns the
// number of subschemas.
func checkStructure(raw any) (int, error) {
	sum := 0
	var path docPath
	if err := checkNumbers(raw, &path, &sum); err != nil {
		return 0, err
	}
	// one walk: the subschemas counted (MaxSubschemas is reported
	// first), the first object over MaxProperties kept
	n, over := 0, "#"
	var err error
	eachSubschema(raw, func(o *ordObj, path docPath) bool {
		if n++; n == MaxSubschemas+1 {
			over = path.String()
		}
		if o == nil || err != nil {
			return true
		}
		if p, ok := o.vals["properties"].(*ordObj); ok && len(p.keys) > MaxProperties {
			err = &LimitError{Pointer: joinPointer(path.String(), "properties"), Limit: "MaxProperties", Value: len(p.keys), Max: MaxProperties}
		}
		return true
	})
	if n > MaxSubschemas {
		return n, &LimitError{Pointer: over, Limit: "MaxSubschemas", Value: n, Max: MaxSubschemas}
	}
	return n, err
}

// docPath is the way from a document's root to one of its values: object
// keys and array indexes. Walks keep one and spell the JSON pointer out
// only when they report it.
type docPath []pathTok

type pathTok struct {
	key   string
	index int // ≥ 0: an array index (key unused)
}

// String returns the path as a URI-fragment JSON pointer, "#" for the
// root, the way joinPointer builds it one key at a time.
func (p docPath) String() string {
	ptr := "#"
	for _, t := range p {
		if t.index >= 0 {
			ptr += "/" + strconv.Itoa(t.index)
		} else {
			ptr = joinPointer(ptr, t.key)
		}
	}
	return ptr
}

func (p docPath) key(k string) docPath { return append(p, pathTok{key: k, index: -1}) }
func (p docPath) index(i int) docPath  { return append(p, pathTok{index: i}) }

// checkNumbers checks every number of a raw document against
// MaxNumberLength, and adds to *sum the exponent magnitude of those the
// validator reads (MaxExponentSum). path is v's (restored on return).
func checkNumbers(v any, path *docPath, sum *int) error {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if len(s) > MaxNumberLength {
			return &LimitError{Pointer: path.String(), Limit: "MaxNumberLength", Value: len(s), Max: MaxNumberLength}
		}
		if !judgeable(s) {
			return nil // rewriteHugeNumbers: an error or a dropped enum value
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			e, _ := strconv.Atoi(strings.TrimLeft(s[i+1:], "+-")) // ≤ ValidatorMaxExponent+MaxNumberLength: judgeable
			if *sum += e; *sum > MaxExponentSum {
				return &LimitError{Pointer: path.String(), Limit: "MaxExponentSum", Value: *sum, Max: MaxExponentSum,
					Hint: "the validator builds every power of ten the schema's numbers name"}
			}
		}
	case *ordObj:
		n := len(*path)
		for _, k := range x.keys {
			*path = path.key(k)
			err := checkNumbers(x.vals[k], path, sum)
			*path = (*path)[:n]
			if err != nil {
				return err
			}
		}
	case []any:
		n := len(*path)
		for i, e := range x {
			*path = path.index(i)
			err := checkNumbers(e, path, sum)
			*path = (*path)[:n]
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// Keywords whose value is a schema, an array of schemas, or an object of
// schemas (over all drafts).
var (
	schemaKeywords = []string{"additionalProperties", "additionalItems", "items", "contains", "propertyNames", "not",
		"if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMapKeywords   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

// subschemaKeyword holds every keyword of schemaKeywords,
// schemaArrayKeywords and schemaMapKeywords (which cover subschemaKeys'
// lists of every draft).
var subschemaKeyword = func() map[string]bool {
	m := map[string]bool{}
	for _, ks := range [][]string{schemaKeywords, schemaArrayKeywords, schemaMapKeywords} {
		for _, k := range ks {
			m[k] = true
		}
	}
	return m
}()

// hasSubschemaKeyword reports whether a schema object has a keyword
// whose value holds subschemas: the walks look up their keyword lists
// (in their order) only then, most schema objects of a document being
// leaves with a few other keywords.
func hasSubschemaKeyword(o *ordObj) bool {
	for _, k := range o.keys {
		if subschemaKeyword[k] {
			return true
		}
	}
	return false
}

// countSubschemas counts the subschemas of a raw document (objects and
// booleans in schema positions, the root included) and returns the
// pointer of the one that went past limit ("#" if none did).
func countSubschemas(raw any, limit int) (n int, over string) {
	over = "#"
	eachSubschema(raw, func(_ *ordObj, path docPath) bool {
		n++
		if n == limit+1 {
			over = path.String()
		}
		return true
	})
	return n, over
}

// eachSubschema calls f with every subschema of a raw document, root
// first (a boolean schema as a nil object), and its path, until f
// returns false. The path is valid during the call.
func eachSubschema(raw any, f func(o *ordObj, path docPath) bool) {
	var path docPath
	var visit func(v any) bool
	visit = func(v any) bool {
		o, isObj := v.(*ordObj)
		if _, isBool := v.(bool); !isObj && !isBool {
			return true
		}
		if !f(o, path) {
			return false
		}
		if !isObj || !hasSubschemaKeyword(o) {
			return true
		}
		n := len(path)
		defer func() { path = path[:n] }()
		for _, k := range schemaKeywords {
			if x, ok := o.vals[k]; ok {
				path = path[:n].key(k)
				if !visit(x) {
					return false
				}
			}
		}
		for _, k := range schemaArrayKeywords {
			if xs, ok := o.vals[k].([]any); ok {
				for i, x := range xs {
					path = path[:n].key(k).index(i)
					if !visit(x) {
						return false
					}
				}
			}
		}
		for _, k := range schemaMapKeywords {
			if m, ok := o.vals[k].(*ordObj); ok {
				for _, name := range m.keys {
					path = path[:n].key(k).key(name)
					if !visit(m.vals[name]) {
						return false
					}
				}
			}
		}
		return true
	}
	visit(raw)
}

// rootURL is the base URL the schema is compiled under when it has no
// $id. It is never loaded.
const rootURL = "file:///structgen/schema.json"

// ordObj is a JSON object with its keys in document order.
type ordObj struct {
	keys []string
	vals map[string]any
}

// loaded is a compiled schema plus the raw document (with key order).
type loaded struct {
	schema *jsonschema.Schema // what the converter reads (dynamic references made static, see staticRefs)
	judge  *jsonschema.Schema // the validator's compilation of the document as written
	raw    any                // *ordObj, []any, json.Number, string, bool, nil; the document of schema
	draft  *jsonschema.Draft
	base   string   // the root schema's base URL (its $id, else rootURL)
	dyn    []dynRef // dynamic references whose target depends on the scope
}

// parseOrdered decodes JSON keeping object key order, with numbers as
// json.Number. It rejects trailing data and nesting deeper than
// MaxNestingDepth.
func parseOrdered(data []byte) (any, error) {
	if v, ok := fastParse(data); ok {
		return v, nil
	}
	return decodeOrdered(data)
}

// decodeOrdered is parseOrdered through encoding/json's decoder, which
// words the errors.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, jsonPosError(data, dec.InputOffset(), errors.New("data after the top-level value"))
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= MaxNestingDepth {
			return nil, &LimitError{Pointer: "#", Limit: "MaxNestingDepth", Max: MaxNestingDepth}
		}
		switch t {
		case '{':
			o := &ordObj{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v // last one wins, as in encoding/json
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// jsonPosError turns a byte offset into a line:col message.
func jsonPosError(data []byte, off int64, err error) error {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return &InvalidSchemaError{Pointer: "#", Msg: fmt.Sprintf("%d:%d: %v", line, col, err), Err: err}
}

// toPlain converts an ordered value into the representation
// santhosh-tekuri validates (map[string]any).
func toPlain(v any) any {
	switch v := v.(type) {
	case *ordObj:
		m := make(map[string]any, len(v.keys))
		for _, k := range v.keys {
			m[k] = toPlain(v.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toPlain(x)
		}
		return out
	}
	return v
}

// CompileSchema compiles a schema exactly as Convert loads it, for
// validating documents produced with the converted grammar:
// santhosh-tekuri/jsonschema with format assertions on (every draft),
// no network or file access (a reference outside the document is a
// *RemoteRefError naming it), and the same draft choice: the draft
// named by $schema, else 2020-12, falling back to draft-07 and then
// draft-04 when the schema is valid only under the older draft
// (`items` as an array, boolean exclusiveMinimum, `id`-based anchors).
// The returned schema is safe for concurrent use. Its Draft fields may
// point to a copy of the jsonschema draft it was compiled under (without
// the meta-schema, for documents the converter has proven valid against
// it): compare drafts by URL or String, not by pointer.
func CompileSchema(schema []byte) (*jsonschema.Schema, error) {
	l, err := load(schema)
	if err != nil {
		return nil, err
	}
	return l.judge, nil
}

func load(data []byte) (l *loaded, err error) {
	if len(data) > MaxSchemaBytes {
		return nil, &LimitError{Pointer: "#", Limit: "MaxSchemaBytes", Value: len(data), Max: MaxSchemaBytes}
	}
	raw, err := parseOrdered(data)
	if err != nil {
		var le *LimitError
		var ie *InvalidSchemaError
		if errors.As(err, &le) || errors.As(err, &ie) {
			return nil, err
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, jsonPosError(data, se.Offset, err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, jsonPosError(data, int64(len(data)), errors.New("unexpected end of JSON"))
		}
		return nil, &InvalidSchemaError{Pointer: "#", Msg: err.Error(), Err: err}
	}
	switch raw.(type) {
	case *ordObj, bool:
	default:
		return nil, &InvalidSchemaError{Pointer: "#", Msg: "a schema must be a JSON object or a boolean"}
	}
	subschemas, err := checkStructure(raw)
	if err != nil {
		return nil, err
	}
	rewrite := bytes.Contains(data, []byte(`"nullable"`)) && rewriteNullable(raw)
	// (Numbers out of the validator's range are rare: one walk without
	// pointers finds whether there is any before the walk that names them.)
	huge := false
	if _, _, bad := outOfRangeIn(raw); bad {
		if huge, err = rewriteHugeNumbers(raw); err != nil {
			return nil, err
		}
	}
	if rewrite || huge {
		data = []byte(canonicalJSON(raw))
	}
	drafts := []*jsonschema.Draft{jsonschema.Draft2020, jsonschema.Draft7, jsonschema.Draft4}
	explicit := false
	if o, ok := raw.(*ordObj); ok {
		if s, ok := o.vals["$schema"].(string); ok {
			d := draftOf(s)
			if d == nil {
				return nil, &InvalidSchemaError{Pointer: "#/$schema", Msg: fmt.Sprintf("unknown meta-schema %q: supported are drafts 4, 6, 7, 2019-09 and 2020-12 (json-schema.org URIs)", s)}
			}
			drafts = []*jsonschema.Draft{d}
			explicit = true
		}
	}
	if drafts[0] == jsonschema.Draft2020 && subschemas > MaxSubschemas2020 && !compilesAs2019(raw, data) {
		if n, ptr := countSubschemas(raw, MaxSubschemas2020); n > MaxSubschemas2020 {
			return nil, &LimitError{Pointer: ptr, Limit: "MaxSubschemas2020", Value: n, Max: MaxSubschemas2020,
				Hint: "draft 2020-12 compiles in time quadratic in the subschemas; an older draft in $schema allows MaxSubschemas, as does a document without the keywords draft 2019-09 reads differently (prefixItems, items arrays, additionalItems, unevaluatedItems, $dynamicRef, $dynamicAnchor, $recursiveRef, $recursiveAnchor, $vocabulary)"}
		}
	}
	var firstErr error
	for _, d := range drafts {
		l, err := loadAs(raw, data, d)
		if err == nil {
			return l, nil
		}
		var rr *RemoteRefError
		if errors.As(err, &rr) {
			return nil, err
		}
		if pe := patternError(err, raw); pe != nil {
			return nil, pe // the same under every draft
		}
		if firstErr == nil {
			firstErr = err
		}
		if explicit {
			break
		}
	}
	return nil, firstErr
}

// loadAs compiles the document (raw, as text in data) under draft d.
func loadAs(raw any, data []byte, d *jsonschema.Draft) (*loaded, error) {
	// one anchor declared twice in a resource makes the validator's
	// reading random (and with it the draft fallback)
	if err := checkAnchors(raw, d); err != nil {
		return nil, err
	}
	s, locate, err := compileChecked(raw, data, d)
	if err != nil {
		return nil, sameCanonicalURI(err, raw, d)
	}
	base := s.Location
	if i := strings.IndexByte(base, '#'); i >= 0 {
		base = base[:i]
	}
	l := &loaded{schema: s, judge: s, raw: raw, draft: d, base: base}
	if bytes.Contains(data, []byte(`"$dynamicRef"`)) || bytes.Contains(data, []byte(`"$recursiveRef"`)) {
		l.dyn = dynamicRefs(raw, d, s, locate)
	}
	return l, nil
}

// draftOf maps a $schema URL to a draft, nil when unknown.
func draftOf(u string) *jsonschema.Draft {
	u = strings.TrimSuffix(strings.TrimSuffix(u, "#"), "#/")
	u = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	switch u {
	case "json-schema.org/schema", "json-schema.org/draft/2020-12/schema":
		return jsonschema.Draft2020
	case "json-schema.org/draft/2019-09/schema":
		return jsonschema.Draft2019
	case "json-schema.org/draft-07/schema":
		return jsonschema.Draft7
	case "json-schema.org/draft-06/schema":
		return jsonschema.Draft6
	case "json-schema.org/draft-04/schema":
		return jsonschema.Draft4
	}
	return nil
}

// remoteLoad is the compiler's loader: it loads nothing and names the
// reference.
type remoteErr struct{ url string }

func (e *remoteErr) Error() string { return "remote reference " + e.url }

// compileWith compiles a document under draft d. locate returns the
// compiled schema at a JSON pointer of the document (nil if there is
// none): the very schema the validator uses there.
func compileWith(data []byte, d *jsonschema.Draft) (s *jsonschema.Schema, locate func(ptr string) *jsonschema.Schema, err error) {
	return compileDoc(data, nil, d)
}

// compileDoc is compileWith given, when doc is not nil, the document as
// the validator would decode data (toPlain of parseOrdered's value):
// the validator is handed that instead of decoding data again (see
// addDecoded).
func compileDoc(data []byte, doc any, d *jsonschema.Draft) (s *jsonschema.Schema, locate func(ptr string) *jsonschema.Schema, err error) {
	defer func() {
		// santhosh-tekuri/jsonschema panics on a few malformed inputs
		// (regexp.MustCompile on patterns its meta-schema let through);
		// report them as invalid schemas.
		if r := recover(); r != nil {
			s, locate, err = nil, nil, &InvalidSchemaError{Pointer: "#", Msg: fmt.Sprint(r)}
		}
	}()
	c := jsonschema.NewCompiler()
	c.Draft = d
	c.AssertFormat = true
	c.AssertContent = false
	c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, &remoteErr{u} }
	if doc == nil || !addDecoded(c, doc) {
		if err := c.AddResource(rootURL, bytes.NewReader(data)); err != nil {
			return nil, nil, &InvalidSchemaError{Pointer: "#", Msg: err.Error(), Err: err}
		}
	}
	s, err = c.Compile(rootURL)
	if err != nil {
		return nil, nil, firstRefError(translateCompileError(err), data, d)
	}
	locate = func(ptr string) (x *jsonschema.Schema) {
		defer func() {
			if recover() != nil {
				x = nil
			}
		}()
		if ptr == "" {
			return s
		}
		x, err := c.Compile(rootURL + "#" + ptr)
		if err != nil {
			return nil
		}
		return x
	}
	return s, locate, nil
}

// compileChecked is compileWith, skipping the validator's meta-schema
// check when metaValid proves the document passes it (see metacheck.go):
// the document is compiled under the draft's unchecked copy, without its
// root "$schema" (which would select the checked draft again; the draft
// it names is d).
func compileChecked(raw any, data []byte, d *jsonschema.Draft) (*jsonschema.Schema, func(ptr string) *jsonschema.Schema, error) {
	doc := toPlain(raw)
	if !metaValid(raw, data, d) {
		return compileDoc(data, doc, d)
	}
	stripped, ok := withoutSchemaKeyword(raw, data)
	if !ok {
		return compileDoc(data, doc, d)
	}
	data = stripped
	if m, isMap := doc.(map[string]any); isMap {
		delete(m, "$schema")
	}
	ud := uncheckedDrafts[d]
	if d == jsonschema.Draft2020 && sameAs2019(data) {
		ud = unchecked2019
	}
	return compileDoc(data, doc, ud)
}

// A draft 2020-12 document none of whose keywords means something else
// in draft 2019-09 (sameAs2019) is compiled under draft 2019-09's rules,
// which give the same schemas: santhosh-tekuri/jsonschema v5.3.1 tells
// the two drafts apart only by prefixItems (and where items goes),
// $dynamicRef and $dynamicAnchor, additionalItems (ignored by 2020-12),
// $recursiveRef and $recursiveAnchor, the vocabularies
// ($vocabulary), and contains's evaluated items (read only by
// unevaluatedItems). Under 2020-12 it also looks, at every subschema
// it compiles, through all the document's subschemas for a
// $dynamicAnchor (compileDynamicAnchors: quadratic in the subschemas),
// which was a third of the conversion of Github_ultra/o6353 and its
// siblings and 5% of the conversions around the compile p95. The
// converter reads items from either place (arrPartOf) and keeps the
// document's draft for its own choices (loaded.draft).
var unchecked2019 = withoutMeta(jsonschema.Draft2019)

// compilesAs2019 reports whether compileChecked compiles a draft
// 2020-12 document (parsed as raw, its text data) under 2019-09's rules.
func compilesAs2019(raw any, data []byte) bool {
	if !metaValid(raw, data, jsonschema.Draft2020) {
		return false
	}
	data, ok := withoutSchemaKeyword(raw, data)
	return ok && sameAs2019(data)
}

// withoutSchemaKeyword returns the text data of the document raw without
// its root "$schema", if it has one (withoutRootSchemaKeyword); ok is
// false where the text cannot be cut.
func withoutSchemaKeyword(raw any, data []byte) ([]byte, bool) {
	if o, isObj := raw.(*ordObj); isObj {
		if _, has := o.vals["$schema"]; has {
			return withoutRootSchemaKeyword(data)
		}
	}
	return data, true
}

// keywords2020 are the keywords sameAs2019 looks for, by first byte,
// each with its closing quote ("$schema" too: a subschema that names its
// own draft; a document's own is removed before).
var keywords2020 = [256][]string{
	'p': {`prefixItems"`},
	'a': {`additionalItems"`},
	'u': {`unevaluatedItems"`},
	'$': {`$dynamicRef"`, `$dynamicAnchor"`, `$recursiveRef"`, `$recursiveAnchor"`, `$vocabulary"`, `$schema"`},
}

// sameAs2019 reports whether a draft 2020-12 document's text (valid
// against its meta-schema) has none of keywords2020 and no items whose
// value is an array (a tuple in 2019-09, not a schema in 2020-12). It
// errs on the safe side only: a property or a string may have those
// names (an escaped quote too is read as one that opens a name), and a
// text with a \u escape is not looked at (a key may spell a keyword with
// one). One pass over the quotes (ten searches for the quoted names took
// 0.26 ms of Github_ultra/o6366's 3.5 ms conversion: in JSON text every
// quote is a candidate).
func sameAs2019(data []byte) bool {
	if unchecked2019 == nil || bytes.Contains(data, []byte(`\u`)) {
		return false
	}
	for rest := data; ; {
		i := bytes.IndexByte(rest, '"')
		if i < 0 || i+1 == len(rest) {
			return true
		}
		rest = rest[i+1:]
		for _, kw := range keywords2020[rest[0]] {
			if bytes.HasPrefix(rest, []byte(kw)) {
				return false
			}
		}
		if rest[0] == 'i' && bytes.HasPrefix(rest, []byte(`items"`)) {
			// only an array value reads differently
			j := jsonscan.SkipSpace(rest, len(`items"`))
			if j < len(rest) && rest[j] == ':' {
				if j = jsonscan.SkipSpace(rest, j+1); j < len(rest) && rest[j] == '[' {
					return false
				}
			}
		}
	}
}

// addDecoded adds the document doc (as the validator decodes one:
// map[string]any, []any, json.Number, string, bool, nil) to c at rootURL,
// which santhosh-tekuri/jsonschema's AddResource would decode from the
// text again (7% of a conversion at the compile p95, where the
// validator's compile is a quarter): it adds a placeholder and writes doc
// into the resource's unexported doc field (pinned v5.3.1, like
// withoutMeta; TestAddDecoded fails if the field is renamed or changes
// type). It reports false where it cannot; the caller then adds the
// text, which replaces a placeholder added (the same URL).
func addDecoded(c *jsonschema.Compiler, doc any) bool {
	m := reflect.ValueOf(c).Elem().FieldByName("resources")
	if !m.IsValid() || m.Kind() != reflect.Map || m.Len() != 0 {
		return false
	}
	if err := c.AddResource(rootURL, strings.NewReader("true")); err != nil || m.Len() != 1 {
		return false
	}
	it := m.MapRange()
	it.Next()
	r := it.Value()
	if r.Kind() != reflect.Pointer || r.IsNil() {
		return false
	}
	f := r.Elem().FieldByName("doc")
	if !f.IsValid() || f.Kind() != reflect.Interface || f.NumMethod() != 0 {
		return false
	}
	*(*any)(unsafe.Pointer(f.UnsafeAddr())) = doc
	return true
}

// translateCompileError maps santhosh-tekuri's errors onto ours.
func translateCompileError(err error) error {
	var re *remoteErr
	if errors.As(err, &re) {
		return &RemoteRefError{Ref: re.url}
	}
	var lnf jsonschema.LoaderNotFoundError
	if errors.As(err, &lnf) {
		return &RemoteRefError{Ref: string(lnf)}
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		// meta-validation: report a deepest cause with its location.
		leaf := valerr.Leaves(ve)[0]
		ptr := "#" + leaf.InstanceLocation
		return &InvalidSchemaError{Pointer: ptr, Msg: leaf.Message + " (meta-schema " + leaf.KeywordLocation + ")", Err: err}
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "jsonschema "+rootURL+" compilation failed: ")
	msg = strings.ReplaceAll(msg, rootURL, "")
	return &InvalidSchemaError{Pointer: "#", Msg: msg, Err: err}
}

// patternError turns the meta-schema's rejection of a regular expression
// (a pattern, or a patternProperties key: format "regex", checked with
// Go's regexp) into an error that says why: an *UnsupportedError naming
// the ECMA-262 feature Go's RE2 syntax lacks (lookahead, lookbehind,
// backreferences, \u escapes, \c escapes), or an *InvalidSchemaError
// with Go's parse error for a pattern that is invalid in ECMA-262 too.
// It returns nil for other errors. Lenient mode cannot relax such a
// pattern: the validator cannot compile it either.
func patternError(err error, raw any) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil
	}
	// The first regular expression rejected, if any: it says more than
	// the other errors (what RE2 lacks).
	var leaf *jsonschema.ValidationError
	for _, l := range valerr.Leaves(ve) {
		if strings.HasSuffix(l.KeywordLocation, "/format") && strings.HasSuffix(l.Message, " is not valid 'regex'") {
			leaf = l
			break
		}
	}
	if leaf == nil {
		return nil
	}
	loc, uerr := url.PathUnescape(leaf.InstanceLocation)
	if uerr != nil {
		return nil
	}
	i := strings.LastIndexByte(loc, '/')
	if i < 0 {
		return nil
	}
	parent, last := loc[:i], strings.ReplaceAll(strings.ReplaceAll(loc[i+1:], "~1", "/"), "~0", "~")
	var src, ptr, keyword string
	if j := strings.LastIndexByte(parent, '/'); j >= 0 && parent[j+1:] == "patternProperties" {
		src, ptr, keyword = last, "#"+parent[:j], "patternProperties"
	} else if v, ok := rawPointer(raw, loc); ok {
		s, isStr := v.(string)
		if !isStr {
			return nil
		}
		src, ptr, keyword = s, "#"+parent, last
	} else {
		return nil
	}
	if f := ecmaOnlyFeature(src); f != "" {
		return &UnsupportedError{Pointer: ptr, Keyword: keyword, Reason: fmt.Sprintf(
			"unsupported pattern feature (%s) in %q: valid ECMA-262, but Go's regexp (RE2 syntax), which the grammar and the validator use, has no %s", f, src, f)}
	}
	msg := fmt.Sprintf("%q is not a valid regular expression", src)
	if _, cerr := syntax.Parse(src, syntax.Perl); cerr != nil {
		msg += " (" + cerr.Error() + ")"
	}
	return &InvalidSchemaError{Pointer: joinPointer(ptr, keyword), Msg: msg, Err: err}
}

// ecmaOnlyFeature names the first construct of an ECMA-262 regular
// expression that Go's RE2 syntax does not have, or returns "".
func ecmaOnlyFeature(src string) string {
	inClass := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '\\' && i+1 < len(src):
			n := src[i+1]
			switch {
			case n >= '1' && n <= '9' && !inClass:
				return "backreferences"
			case n == 'k' && strings.HasPrefix(src[i+2:], "<") && !inClass:
				return "named backreferences"
			case n == 'u':
				return `\u escapes (write \x{HHHH})`
			case n == 'c' && i+2 < len(src) && (src[i+2]|0x20) >= 'a' && (src[i+2]|0x20) <= 'z':
				return `\c control escapes`
			}
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if strings.HasPrefix(src[i+1:], "^]") || strings.HasPrefix(src[i+1:], "]") {
				return "empty classes [] and [^]"
			}
		case strings.HasPrefix(src[i:], "(?="):
			return "lookahead"
		case strings.HasPrefix(src[i:], "(?!"):
			return "negative lookahead"
		case strings.HasPrefix(src[i:], "(?<="):
			return "lookbehind"
		case strings.HasPrefix(src[i:], "(?<!"):
			return "negative lookbehind"
		}
	}
	return ""
}

// pointerIn returns the readable JSON pointer (URI fragment, "#/a/b") of
// a compiled schema in the document whose base URL is base, or its full
// location when it lies in another resource (a meta-schema).
// santhosh-tekuri locates every subschema of the document under the
// root's base URL (its $id, else rootURL), whatever $id the subschemas
// declare.
func pointerIn(base string, s *jsonschema.Schema) string {
	loc := s.Location
	i := strings.IndexByte(loc, '#')
	if i < 0 || loc[:i] != base {
		return loc
	}
	frag := loc[i:]
	if strings.IndexByte(frag, '%') < 0 {
		return frag // nothing to unescape
	}
	if u, err := url.PathUnescape(frag); err == nil {
		return u
	}
	return frag
}

func (c *conv) ptrOf(s *jsonschema.Schema) string { return pointerIn(c.l.base, s) }

// rawAt returns the raw node of a compiled schema, when it lies in the
// root document.
func (l *loaded) rawAt(s *jsonschema.Schema) (*ordObj, bool) {
	i := strings.IndexByte(s.Location, '#')
	if i < 0 || s.Location[:i] != l.base {
		return nil, false
	}
	p := pointerIn(l.base, s)
	v, ok := rawPointer(l.raw, strings.TrimPrefix(p, "#"))
	if !ok {
		return nil, false
	}
	o, ok := v.(*ordObj)
	return o, ok
}

// rawPointer resolves a JSON pointer ("" or "/a/0/b") in a raw document.
func rawPointer(v any, ptr string) (any, bool) {
	if ptr == "" {
		return v, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case *ordObj:
			nv, ok := x.vals[tok]
			if !ok {
				return nil, false
			}
			v = nv
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// rewriteNullable reads OpenAPI 3.0's `nullable: true` as JSON Schema:
// "null" is added to the schema's type (when it has one) and enum (when
// it has one). It reports whether anything changed. Convert and
// CompileSchema both apply it, so the grammar and the validator agree.
func rewriteNullable(v any) bool {
	changed := false
	walkSchemas(v, jsonschema.Draft2020, func(o *ordObj, _, _ string) {
		if b, ok := o.vals["nullable"].(bool); !ok || !b {
			return
		}
		switch t := o.vals["type"].(type) {
		case string:
			if t != "null" {
				o.vals["type"] = []any{t, "null"}
				changed = true
			}
		case []any:
			has := false
			for _, x := range t {
				has = has || x == "null"
			}
			if !has {
				o.vals["type"] = append(append([]any{}, t...), "null")
				changed = true
			}
		}
		if e, ok := o.vals["enum"].([]any); ok {
			has := false
			for _, x := range e {
				has = has || x == nil
			}
			if !has {
				o.vals["enum"] = append(append([]any{}, e...), nil)
				changed = true
			}
		}
	})
	return changed
}

// sameCanonicalURI rewords the validator's rejection of a document in
// which two subschemas have the same canonical URI (their ids resolve to
// one URL): the validator names a pair taken from a map, a different one
// from run to run when there are three or more; this names the first
// two in document order. Other errors, and a rejection this walk does
// not reproduce, are returned as they are.
func sameCanonicalURI(err error, raw any, d *jsonschema.Draft) error {
	var ie *InvalidSchemaError
	if !errors.As(err, &ie) || !strings.HasSuffix(ie.Msg, " have same canonical-uri") {
		return err
	}
	// the base URL of each schema that may declare one, by its pointer
	root, _ := resolveID(rootURL, raw, d)
	urls := map[string]string{"": root}
	byURL := map[string]string{} // URL → the first subschema declaring it
	var first, second string
	walkSchemas(raw, d, func(o *ordObj, ptr, res string) {
		if ptr == "" || res != ptr || second != "" {
			return
		}
		u, declared := resolveID(enclosingBase(urls, ptr), o, d)
		urls[ptr] = u
		if !declared {
			return
		}
		if p, dup := byURL[u]; dup {
			first, second = p, ptr
		} else {
			byURL[u] = ptr
		}
	})
	if second == "" {
		return err
	}
	msg := fmt.Sprintf("%q and %q in %s have same canonical-uri", first, second, root)
	return &InvalidSchemaError{Pointer: "#", Msg: strings.ReplaceAll(msg, rootURL, ""), Err: ie.Err}
}

// enclosingBase returns the base URL of the schema resource that
// encloses the one at pointer ptr (not the root's): that of the longest
// proper prefix of ptr in urls (resource pointer → base URL, which holds
// the root's, "").
func enclosingBase(urls map[string]string, ptr string) string {
	for {
		ptr = ptr[:strings.LastIndexByte(ptr, '/')]
		if base, ok := urls[ptr]; ok {
			return base
		}
	}
}

// resolveID returns the URL (without fragment) a schema object's id gives
// it against base, as santhosh-tekuri reads ids in draft d (through 7, a
// $ref beside the id cancels it), and true; base and false when it
// declares none.
func resolveID(base string, v any, d *jsonschema.Draft) (string, bool) {
	o, ok := v.(*ordObj)
	if !ok {
		return base, false
	}
	if _, ref := o.vals["$ref"]; ref && before2019(d) {
		return base, false
	}
	id, _ := o.vals[idKey(d)].(string)
	if i := strings.IndexByte(id, '#'); i >= 0 {
		id = id[:i]
	}
	if id == "" {
		return base, false
	}
	b, err1 := url.Parse(base)
	r, err2 := url.Parse(id)
	if err1 != nil || err2 != nil {
		return base + "\x00" + id, true // (unparsable: equal only to the same id on the same base)
	}
	u := b.ResolveReference(r)
	u.Fragment, u.RawFragment = "", ""
	return u.String(), true
}

// firstRefError names, for the validator's rejection of a reference (to
// another document, to nothing in this one: "#/x not found", or no URL
// at all), the first failing reference in document order, with the
// pointer of the schema holding it: the validator compiles a properties
// map in Go's random order and stops at the first reference it cannot
// load or resolve, so of several it would name a different one from run
// to run. data is the text it compiled under draft d (or d's unchecked
// copy). Other errors, and a rejection this walk does not reproduce (the
// validator's failing reference is not among those it finds), are
// returned as they are.
func firstRefError(err error, data []byte, d *jsonschema.Draft) error {
	var rr *RemoteRefError
	var ie *InvalidSchemaError
	notFound, parseErr := "", ""
	switch {
	case errors.As(err, &rr):
	case !errors.As(err, &ie) || ie.Pointer != "#":
		return err
	case strings.HasSuffix(ie.Msg, " not found") && !strings.Contains(strings.TrimSuffix(ie.Msg, " not found"), " "):
		notFound = strings.TrimSuffix(ie.Msg, " not found")
	case strings.HasPrefix(ie.Msg, "parse \""):
		parseErr = ie.Msg // (a reference that is no URL, as url.Parse words it)
	default:
		return err
	}
	raw, perr := parseOrdered(data)
	if perr != nil {
		return err
	}
	d = checkedDraft(d)
	type ref struct{ ptr, url, frag, perr string }
	var refs []ref
	root, _ := resolveID(rootURL, raw, d)
	urls := map[string]string{"": root}    // resource pointer → its base URL
	resources := map[string]any{root: raw} // base URL → the resource's schema
	resPtr := map[string]string{root: ""}  // base URL → the resource's pointer
	anchors := map[[2]string]bool{}        // (resource pointer, anchor)
	var ignored []string                   // (drafts 4–7) schemas whose $ref hides their other keywords
	walkSchemas(raw, d, func(o *ordObj, ptr, res string) {
		for _, p := range ignored {
			if strings.HasPrefix(ptr, p+"/") {
				return
			}
		}
		if _, ok := urls[res]; !ok {
			u, _ := resolveID(enclosingBase(urls, res), o, d)
			urls[res] = u
			if _, dup := resources[u]; !dup {
				resources[u], resPtr[u] = o, res
			}
		}
		for _, a := range anchorsOf(o, d) {
			anchors[[2]string{res, a}] = true
		}
		for _, k := range [...]string{"$ref", "$dynamicRef"} {
			s, ok := o.vals[k].(string)
			if !ok || k == "$dynamicRef" && d != jsonschema.Draft2020 {
				continue
			}
			b, err1 := url.Parse(urls[res])
			r, err2 := url.Parse(s)
			if err2 != nil {
				refs = append(refs, ref{ptr: ptr, perr: err2.Error()})
				continue
			}
			if err1 != nil {
				continue
			}
			u := b.ResolveReference(r)
			frag := u.Fragment
			u.Fragment, u.RawFragment = "", ""
			if k == "$dynamicRef" {
				frag = "" // (resolved by the dynamic scope; only its document is checked)
			}
			refs = append(refs, ref{ptr: ptr, url: u.String(), frag: frag})
		}
		if _, ok := o.vals["$ref"]; ok && before2019(d) {
			ignored = append(ignored, ptr)
		}
	})
	// resolves reports whether fragment frag finds a schema in the
	// resource at u: a JSON pointer into it, or an anchor it declares.
	resolves := func(u, frag string) bool {
		if frag == "" {
			return true
		}
		if frag[0] != '/' {
			return anchors[[2]string{resPtr[u], frag}]
		}
		_, ok := rawPointer(resources[u], frag)
		return ok
	}
	// The first failing reference, and whether the validator's is one.
	var first *ref
	firstRemote, reported := false, false
	for i := range refs {
		r := &refs[i]
		_, local := resources[r.url]
		switch {
		case r.perr != "":
			local = true
			reported = reported || parseErr != "" && r.perr == parseErr
		case !local:
			reported = reported || rr != nil && r.url == rr.Ref
		case !resolves(r.url, r.frag):
			// (the validator writes the fragment escaped)
			escaped := (&url.URL{Fragment: r.frag}).EscapedFragment()
			reported = reported || notFound != "" && (refName(r.url, r.frag) == notFound || refName(r.url, escaped) == notFound)
		default:
			continue
		}
		if first == nil {
			first, firstRemote = r, !local
		}
	}
	if first == nil || !reported {
		return err
	}
	if firstRemote {
		return &RemoteRefError{Pointer: "#" + first.ptr, Ref: first.url}
	}
	if first.perr != "" {
		return &InvalidSchemaError{Pointer: "#" + first.ptr, Msg: "$ref: " + first.perr}
	}
	return &InvalidSchemaError{Pointer: "#" + first.ptr, Msg: "$ref " + strconv.Quote(refName(first.url, first.frag)) + " not found"}
}

// refName is a reference to fragment frag of the document at u as the
// validator's errors name it: without the schema's own URL.
func refName(u, frag string) string { return strings.TrimPrefix(u+"#"+frag, rootURL) }

// checkedDraft is the jsonschema draft d is a copy of (uncheckedDrafts,
// unchecked2019), d itself when it is one.
func checkedDraft(d *jsonschema.Draft) *jsonschema.Draft {
	if d == unchecked2019 {
		return jsonschema.Draft2019
	}
	for c, u := range uncheckedDrafts {
		if u == d {
			return c
		}
	}
	return d
}
