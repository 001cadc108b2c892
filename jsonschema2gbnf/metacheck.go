package jsonschema2gbnf

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp/syntax"
	"strings"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/internal/jsonscan"
)

// The meta-schema validation santhosh-tekuri/jsonschema runs in every
// compile was 29% of the conversion time over JSONSchemaBench (more
// than half for draft 2020-12 documents, whose meta-schema is seven
// vocabularies joined by $dynamicRef). metaValid proves most documents
// valid against their draft's meta-schema in one walk over the parsed
// document (99% of the corpus); those are compiled under a copy of the
// draft without its meta-schema (uncheckedDrafts), which skips the
// validator's own check.
// Every document metaValid cannot prove valid is compiled as before, so
// an invalid schema gets exactly the validator's error.

// uncheckedDrafts maps the drafts metaValid knows to copies whose
// meta-schema is nil: santhosh-tekuri's Compiler.validateSchema skips a
// draft without one (as it does while bootstrapping the meta-schemas).
// The copies keep the version, id keyword, vocabularies and subschema
// positions, so they compile and validate exactly like the originals.
var uncheckedDrafts = map[*jsonschema.Draft]*jsonschema.Draft{
	jsonschema.Draft4:    withoutMeta(jsonschema.Draft4),
	jsonschema.Draft7:    withoutMeta(jsonschema.Draft7),
	jsonschema.Draft2020: withoutMeta(jsonschema.Draft2020),
}

// withoutMeta copies d with its unexported meta field cleared (pinned
// santhosh-tekuri/jsonschema v5.3.1; TestUncheckedDraft fails if the
// field is renamed or changes type).
func withoutMeta(d *jsonschema.Draft) *jsonschema.Draft {
	cp := *d
	f := reflect.ValueOf(&cp).Elem().FieldByName("meta")
	if !f.IsValid() || f.Type() != reflect.TypeOf((*jsonschema.Schema)(nil)) {
		return nil
	}
	*(**jsonschema.Schema)(unsafe.Pointer(f.UnsafeAddr())) = nil
	return &cp
}

// metaKind is what a draft's meta-schema requires of one keyword's value.
type metaKind uint8

const (
	mAny          metaKind = iota // anything (default, const, unknown keywords)
	mBail                         // metaValid gives up (rare keywords with semantics of their own)
	mString                       // a string
	mBool                         // a boolean
	mNumber                       // a number
	mNonNegInt                    // an integer ≥ 0 (digits only)
	mPositive                     // a number > 0 (multipleOf)
	mArray                        // an array of anything (examples)
	mRegex                        // a string that is a valid regex (format "regex")
	mURI                          // format "uri"
	mURIRef                       // format "uri-reference"
	mID2020                       // uri-reference without a non-empty fragment
	mAnchor                       // ^[A-Za-z_][-A-Za-z0-9._]*$
	mSchema                       // a schema
	mSchemaArray                  // a non-empty array of schemas
	mSchemaOrArr                  // a schema or a non-empty array of schemas (items before 2020-12)
	mSchemaMap                    // an object of schemas
	mPatternMap                   // an object of schemas whose keys are regexes
	mStringArray                  // an array of distinct strings (non-empty in draft 4)
	mDeps                         // an object of schemas or string arrays (dependencies)
	mStringArrMap                 // an object of string arrays (dependentRequired)
	mEnum                         // an array, non-empty and of distinct values before 2020-12
	mType                         // a simple type, or a non-empty array of distinct ones
	mExclusive4                   // draft 4: a boolean, with its bound (maximum/minimum) beside it
	mBoolOrSchema                 // draft 4: a boolean or a schema (additionalItems, additionalProperties)
)

// metaKinds lists, per draft, every keyword its meta-schema constrains
// (TestMetaKindsCoverMetaSchemas checks the list against the
// meta-schemas' properties). Keywords a draft does not know are read
// with the stricter kind of a later draft where that is simpler: a
// document they reject is only compiled the slow way.
var metaKinds = func() map[*jsonschema.Draft]map[string]metaKind {
	d7 := map[string]metaKind{
		"$id": mURIRef, "$schema": mURI, "$ref": mURIRef, "$comment": mString,
		"title": mString, "description": mString, "default": mAny, "const": mAny,
		"readOnly": mBool, "writeOnly": mBool, "deprecated": mBool, "examples": mArray,
		"multipleOf": mPositive, "maximum": mNumber, "exclusiveMaximum": mNumber,
		"minimum": mNumber, "exclusiveMinimum": mNumber,
		"maxLength": mNonNegInt, "minLength": mNonNegInt, "pattern": mRegex,
		"additionalItems": mSchema, "items": mSchemaOrArr, "maxItems": mNonNegInt,
		"minItems": mNonNegInt, "uniqueItems": mBool, "contains": mSchema,
		"maxProperties": mNonNegInt, "minProperties": mNonNegInt, "required": mStringArray,
		"additionalProperties": mSchema, "definitions": mSchemaMap, "properties": mSchemaMap,
		"patternProperties": mPatternMap, "dependencies": mDeps, "propertyNames": mSchema,
		"enum": mEnum, "type": mType, "format": mString,
		"contentMediaType": mString, "contentEncoding": mString,
		"if": mSchema, "then": mSchema, "else": mSchema,
		"allOf": mSchemaArray, "anyOf": mSchemaArray, "oneOf": mSchemaArray, "not": mSchema,
		"$defs": mSchemaMap, "dependentSchemas": mSchemaMap, "dependentRequired": mStringArrMap,
		"prefixItems": mSchemaArray, "unevaluatedItems": mSchema, "unevaluatedProperties": mSchema,
		"contentSchema": mSchema, "maxContains": mNonNegInt, "minContains": mNonNegInt,
		"$anchor":     mAnchor,
		"$dynamicRef": mBail, "$dynamicAnchor": mBail, "$recursiveRef": mBail,
		"$recursiveAnchor": mBail, "$vocabulary": mBail, "regexProperties": mBail,
	}
	with := func(over map[string]metaKind) map[string]metaKind {
		m := make(map[string]metaKind, len(d7)+len(over))
		for k, v := range d7 {
			m[k] = v
		}
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	return map[*jsonschema.Draft]map[string]metaKind{
		jsonschema.Draft4: with(map[string]metaKind{
			"id": mURIRef, "$ref": mString,
			"exclusiveMaximum": mExclusive4, "exclusiveMinimum": mExclusive4,
			"additionalItems": mBoolOrSchema, "additionalProperties": mBoolOrSchema,
		}),
		jsonschema.Draft7:    d7,
		jsonschema.Draft2020: with(map[string]metaKind{"$id": mID2020, "items": mSchema}),
	}
}()

// metaValid reports whether the document raw (as parsed from data)
// certainly passes draft d's meta-schema validation as
// santhosh-tekuri/jsonschema runs it, including the validation of the
// subschemas at non-standard locations that a "#/…" reference reaches.
// false means "not known": the validator decides.
func metaValid(raw any, data []byte, d *jsonschema.Draft) bool {
	kinds := metaKinds[d]
	if kinds == nil || uncheckedDrafts[d] == nil {
		return false
	}
	// dynamic references are resolved through compiled schemas at
	// arbitrary pointers (dynamicRefs' locate), which the validator
	// checks one by one
	if bytesContainsAny(data, `"$dynamicRef"`, `"$recursiveRef"`) {
		return false
	}
	// the validator takes the draft from a root $schema; the document
	// is compiled without it only when it names d
	if o, ok := raw.(*ordObj); ok {
		if x, has := o.vals["$schema"]; has {
			if u, ok := x.(string); !ok || validatorDraft(u) != d {
				return false
			}
		}
	}
	m := metaCheck{d: d, kinds: kinds, root: raw, draft4: d == jsonschema.Draft4, refs: map[string]bool{}, regexes: map[string]bool{}}
	return m.schema(raw, true, 0)
}

// validatorDraft is the draft santhosh-tekuri/jsonschema v5.3.1 reads
// from a $schema URL (its findDraft), nil for others.
func validatorDraft(u string) *jsonschema.Draft {
	if strings.HasPrefix(u, "http://") {
		u = "https://" + strings.TrimPrefix(u, "http://")
	}
	if strings.HasSuffix(u, "#") || strings.HasSuffix(u, "#/") {
		u = u[:strings.IndexByte(u, '#')]
	}
	switch u {
	case "https://json-schema.org/schema", "https://json-schema.org/draft/2020-12/schema":
		return jsonschema.Draft2020
	case "https://json-schema.org/draft/2019-09/schema":
		return jsonschema.Draft2019
	case "https://json-schema.org/draft-07/schema":
		return jsonschema.Draft7
	case "https://json-schema.org/draft-06/schema":
		return jsonschema.Draft6
	case "https://json-schema.org/draft-04/schema":
		return jsonschema.Draft4
	}
	return nil
}

func bytesContainsAny(data []byte, subs ...string) bool {
	for _, s := range subs {
		if strings.Contains(unsafeString(data), s) {
			return true
		}
	}
	return false
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

type metaCheck struct {
	d       *jsonschema.Draft
	kinds   map[string]metaKind
	root    any
	draft4  bool
	refs    map[string]bool // "#/…" references whose target is checked
	regexes map[string]bool // the patterns checked, valid or not
}

func (m *metaCheck) schema(v any, root bool, depth int) bool {
	if depth > 2*MaxNestingDepth {
		return false
	}
	o, ok := v.(*ordObj)
	if !ok {
		_, isBool := v.(bool)
		return isBool && !m.draft4
	}
	// a base URI of its own changes what "#/…" references below it
	// name; such documents are left to the validator
	if !root && newBase(o, m.d) {
		return false
	}
	for _, k := range o.keys {
		x := o.vals[k]
		kind := m.kinds[k]
		if k == "$ref" {
			if s, ok := x.(string); ok && !m.ref(s, depth) {
				return false
			}
		}
		switch kind {
		case mAny:
		case mBail:
			return false
		case mString:
			if _, ok := x.(string); !ok {
				return false
			}
		case mBool:
			if _, ok := x.(bool); !ok {
				return false
			}
		case mNumber:
			if _, ok := x.(json.Number); !ok {
				return false
			}
		case mNonNegInt:
			if !nonNegInt(x) {
				return false
			}
		case mPositive:
			if !positiveNumber(x) {
				return false
			}
		case mArray:
			if _, ok := x.([]any); !ok {
				return false
			}
		case mRegex:
			if !m.regex(x) {
				return false
			}
		case mURI:
			if !isFormat(x, formatURI) {
				return false
			}
		case mURIRef:
			if !isFormat(x, formatURIRef) {
				return false
			}
		case mID2020:
			s, ok := x.(string)
			if !ok || !isFormat(s, formatURIRef) {
				return false
			}
			if i := strings.IndexByte(s, '#'); i >= 0 && i != len(s)-1 {
				return false
			}
		case mAnchor:
			if !isAnchorName(x) {
				return false
			}
		case mSchema:
			if !m.schema(x, false, depth+1) {
				return false
			}
		case mBoolOrSchema:
			if _, isBool := x.(bool); !isBool && !m.schema(x, false, depth+1) {
				return false
			}
		case mSchemaArray:
			if !m.schemaArray(x, depth) {
				return false
			}
		case mSchemaOrArr:
			if _, isArr := x.([]any); isArr {
				if !m.schemaArray(x, depth) {
					return false
				}
			} else if !m.schema(x, false, depth+1) {
				return false
			}
		case mSchemaMap, mPatternMap, mDeps, mStringArrMap:
			mo, ok := x.(*ordObj)
			if !ok {
				return false
			}
			for _, name := range mo.keys {
				if !m.member(kind, name, mo.vals[name], depth) {
					return false
				}
			}
		case mStringArray:
			if !m.stringArray(x) {
				return false
			}
		case mEnum:
			arr, ok := x.([]any)
			if !ok || m.d != jsonschema.Draft2020 && (len(arr) == 0 || !distinctValues(arr)) {
				return false
			}
		case mType:
			if !simpleTypes(x) {
				return false
			}
		case mExclusive4:
			if _, ok := x.(bool); !ok {
				return false
			}
			if _, ok := o.vals[exclusiveBound[k]]; !ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// ref checks the target of a "#/…" reference: the validator checks one
// at a location that is not a standard subschema position when the
// reference is compiled. Other references name an anchor or a whole
// resource (no check), or another document (no meta-schema check
// before it fails); a pointer after a base URL is left to the validator.
func (m *metaCheck) ref(ref string, depth int) bool {
	i := strings.IndexByte(ref, '#')
	if i < 0 || i == len(ref)-1 || ref[i+1] != '/' {
		return true
	}
	if i > 0 || strings.IndexByte(ref, '%') >= 0 {
		return false
	}
	if m.refs[ref] {
		return true
	}
	m.refs[ref] = true
	v, ok := rawPointer(m.root, ref[1:])
	if !ok {
		return true // not found: an error without a meta-schema check
	}
	return m.schema(v, false, depth+1)
}

// member checks one member of an object-valued keyword of that kind.
func (m *metaCheck) member(kind metaKind, name string, e any, depth int) bool {
	switch kind {
	case mPatternMap:
		if !m.regex(name) {
			return false
		}
	case mStringArrMap:
		return m.stringArray(e)
	case mDeps:
		if _, isArr := e.([]any); isArr {
			return m.stringArray(e)
		}
	}
	return m.schema(e, false, depth+1)
}

func (m *metaCheck) schemaArray(x any, depth int) bool {
	arr, ok := x.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	for _, e := range arr {
		if !m.schema(e, false, depth+1) {
			return false
		}
	}
	return true
}

func (m *metaCheck) stringArray(x any) bool {
	arr, ok := x.([]any)
	if !ok || m.draft4 && len(arr) == 0 {
		return false
	}
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return false
		}
		for _, f := range arr[:i] {
			if f == s {
				return false
			}
		}
	}
	return true
}

// exclusiveBound: draft 4's meta-schema has exclusiveMaximum depend on
// maximum and exclusiveMinimum on minimum.
var exclusiveBound = map[string]string{"exclusiveMaximum": "maximum", "exclusiveMinimum": "minimum"}

var simpleTypeNames = map[string]bool{"array": true, "boolean": true, "integer": true, "null": true, "number": true, "object": true, "string": true}

func simpleTypes(x any) bool {
	if s, ok := x.(string); ok {
		return simpleTypeNames[s]
	}
	arr, ok := x.([]any)
	if !ok || len(arr) == 0 {
		return false
	}
	for i, e := range arr {
		s, ok := e.(string)
		if !ok || !simpleTypeNames[s] {
			return false
		}
		for _, f := range arr[:i] {
			if f == s {
				return false
			}
		}
	}
	return true
}

// distinctValues reports whether the values certainly differ under the
// validator's equality (numbers compare by value): strings, booleans and
// null by themselves, numbers only when each is written as a plain
// integer (other spellings may name one value twice), and at most one
// object or array.
func distinctValues(arr []any) bool {
	seen := make(map[any]bool, len(arr))
	composite := 0
	for _, e := range arr {
		switch x := e.(type) {
		case string, bool, nil:
		case json.Number:
			if !plainInteger(string(x)) {
				return false
			}
		default:
			if composite++; composite > 1 {
				return false
			}
			continue
		}
		if seen[e] {
			return false
		}
		seen[e] = true
	}
	return true
}

// plainInteger: -?(0|[1-9][0-9]*), "-0" excluded.
func plainInteger(s string) bool {
	if s == "-0" {
		return false
	}
	s = strings.TrimPrefix(s, "-")
	return digitsOnly(s) && (s[0] != '0' || len(s) == 1)
}

func nonNegInt(x any) bool {
	n, ok := x.(json.Number)
	return ok && digitsOnly(string(n))
}

// digitsOnly: one or more of 0-9.
func digitsOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// positiveNumber: a number without sign or exponent with a non-zero digit.
func positiveNumber(x any) bool {
	n, ok := x.(json.Number)
	if !ok || n == "" || n[0] == '-' || strings.ContainsAny(string(n), "eE") {
		return false
	}
	return strings.ContainsAny(string(n), "123456789")
}

// The format checks of the meta-schemas, as the validator compiled them
// at its initialization (a program may replace jsonschema.Formats
// entries later; the meta-schemas keep these).
var (
	formatURI    = jsonschema.Formats["uri"]
	formatURIRef = jsonschema.Formats["uri-reference"]
)

func isFormat(x any, check func(any) bool) bool {
	s, ok := x.(string)
	return ok && check(s)
}

// regex is the meta-schemas' format "regex": regexp.Compile succeeds
// exactly when syntax.Parse with syntax.Perl does (its later steps
// cannot fail; TestRegexFormat compares them), which costs a fraction of
// the compile. A document's patterns repeat, so each is checked once.
func (m *metaCheck) regex(x any) bool {
	s, ok := x.(string)
	if !ok {
		return false
	}
	valid, seen := m.regexes[s]
	if !seen {
		_, err := syntax.Parse(s, syntax.Perl)
		valid = err == nil
		m.regexes[s] = valid
	}
	return valid
}

func isAnchorName(x any) bool {
	s, ok := x.(string)
	if !ok || s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c == '_':
		case i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// withoutRootSchemaKeyword returns the JSON object text data without its
// top-level "$schema" member (the validator reads the draft from it, and
// with it the meta-schema it checks against; the draft is given to the
// compiler instead). ok is false when data's root is not an object or
// spells a key with escapes (left to the slow path).
func withoutRootSchemaKeyword(data []byte) (out []byte, ok bool) {
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	type member struct{ start, end int } // key start, value end
	var members []member
	at := -1 // the index of the "$schema" member
	for i++; ; {
		i = jsonscan.SkipSpace(data, i)
		if i < len(data) && data[i] == ',' {
			i = jsonscan.SkipSpace(data, i+1)
		}
		if i >= len(data) {
			return nil, false
		}
		if data[i] == '}' {
			break
		}
		keyEnd := jsonscan.SkipString(data, i)
		if keyEnd < 0 || bytes.IndexByte(data[i:keyEnd], '\\') >= 0 {
			return nil, false
		}
		if string(data[i:keyEnd]) == `"$schema"` {
			if at >= 0 {
				return nil, false // twice: the last one counts
			}
			at = len(members)
		}
		j := jsonscan.SkipSpace(data, keyEnd)
		if j >= len(data) || data[j] != ':' {
			return nil, false
		}
		end := jsonscan.SkipValue(data, jsonscan.SkipSpace(data, j+1))
		if end < 0 {
			return nil, false
		}
		members = append(members, member{i, end})
		i = end
	}
	if at < 0 {
		return nil, false
	}
	from, to := members[at].start, members[at].end
	switch {
	case at > 0: // ", "$schema": …" after the previous member
		from = members[at-1].end
	case len(members) > 1: // the first: up to the next member
		to = members[1].start
	}
	out = make([]byte, 0, len(data)-(to-from))
	return append(append(out, data[:from]...), data[to:]...), true
}
