package jsonschema2gbnf

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Limits on the expansion. Each guards against a schema whose grammar
// would grow without bound.
const (
	// MaxTerms bounds the number of distinct (schema combination) terms
	// the converter expands: anyOf inside allOf distributes, and nested
	// combinations multiply. The largest corpus schemas need a few
	// thousand; beyond 20,000 the grammar would be megabytes.
	MaxTerms = 4000

	// MaxGrammarBytes bounds the grammar text. The largest corpus
	// grammars are a few hundred KB.
	MaxGrammarBytes = 4 << 20

	// MaxEnumValues bounds the values of one enum written into the
	// grammar (each value is one alternative).
	MaxEnumValues = 10000

	// MaxAlternatives bounds the branches one anyOf/oneOf expansion may
	// produce after distribution over allOf.
	MaxAlternatives = 4096

	// MaxOneOfExclusions bounds, for one oneOf branch, the combinations of
	// the negated overlapping branches it is intersected with (each is a
	// term of the grammar), after dropping the combinations that contradict
	// the branch: beyond a few hundred the grammar grows by megabytes.
	MaxOneOfExclusions = 256
)

// Convert converts a JSON Schema into a GBNF grammar whose start rule is
// `root`. See the package documentation for what is supported and how.
func Convert(schema []byte, opts ...Option) (string, error) {
	g, _, err := ConvertAndCompile(schema, opts...)
	return g, err
}

// ConvertAndCompile is Convert and CompileSchema in one: the grammar and
// the validator of the same schema, for the price of one load (loading
// is most of a conversion's time: the validator's compiler runs in both).
func ConvertAndCompile(schema []byte, opts ...Option) (grammar string, validator *jsonschema.Schema, err error) {
	o, err := applyOptions(opts)
	if err != nil {
		return "", nil, err
	}
	l, err := load(schema)
	if err != nil {
		return "", nil, err
	}
	c := newConv(l, o)
	if err := c.staticRefs(); err != nil {
		return "", nil, err
	}
	if grammar, err = c.run(); err != nil {
		return "", nil, err
	}
	return grammar, l.judge, nil
}

// Type bits.
const (
	tNull uint8 = 1 << iota
	tBool
	tObj
	tArr
	tStr
	tInt // integer-valued numbers
	tNum // numbers that are not integers
	tAll = tNull | tBool | tObj | tArr | tStr | tInt | tNum
)

func typeMask(names []string) uint8 {
	var m uint8
	for _, n := range names {
		switch n {
		case "null":
			m |= tNull
		case "boolean":
			m |= tBool
		case "object":
			m |= tObj
		case "array":
			m |= tArr
		case "string":
			m |= tStr
		case "integer":
			m |= tInt
		case "number":
			m |= tInt | tNum
		}
	}
	return m
}

type conv struct {
	l        *loaded
	o        options
	rules    *ruleTable
	prims    map[string]string
	memo     map[string]string
	refs     map[string]int // references to reserved rule names while building
	errs     []error
	fatal    error
	modRules map[string]string
	terms    int
	depth    int
	warned   map[string]bool
	keyLangs map[string]string // memo of key-language expressions
	notIn    map[int32]string  // memo of notInSet rules by the excluded suffix set's trie node
	keyTries keyTries          // the tries of notInSet and the memo of their expressions
	dfas     dfaMemo           // memo of automata, regexps and class expressions

	// rootPending makes the first term emitted take the name "root"
	rootPending bool
	quiet       int // > 0 while analysing: unsupported keywords are not reported
	dfaWork     int // automaton states written so far (MaxDFAWork)
}

func newConv(l *loaded, o options) *conv {
	return &conv{
		l:        l,
		o:        o,
		rules:    newRuleTable(),
		prims:    map[string]string{},
		memo:     map[string]string{},
		refs:     map[string]int{},
		modRules: map[string]string{},
		warned:   map[string]bool{},
		keyLangs: map[string]string{},
		notIn:    map[int32]string{},
	}
}

func (c *conv) run() (string, error) {
	c.rootPending = true
	x := c.emit(term{ms: []*jsonschema.Schema{c.l.schema}}, "#")
	if c.fatal != nil {
		return "", c.fatal
	}
	if err := sortErrors(c.errs); err != nil {
		return "", err
	}
	if x == "" {
		return "", &UnsatisfiableError{Pointer: "#"}
	}
	if x != ruleRoot {
		c.rules.fresh(ruleRoot)
		c.rules.define(ruleRoot, x)
	}
	c.addPrimDeps()
	out := c.rules.text(c.prims)
	if len(out) > MaxGrammarBytes {
		return "", &LimitError{Pointer: "#", Limit: "MaxGrammarBytes", Value: len(out), Max: MaxGrammarBytes}
	}
	return out, nil
}

// prim marks a shared primitive rule as used and returns its name.
func (c *conv) prim(name string) string {
	if _, ok := c.prims[name]; !ok {
		c.prims[name] = primBody(name, c.o)
	}
	return name
}

// primNames are the shared primitive rules (primBody), callees first.
var primNames = []string{ruleWS, ruleHex, ruleChar, ruleString, ruleKEsc, ruleKChar, ruleKString,
	ruleNzUint, ruleUint, ruleInteger, ruleFDigits, ruleFZeros, ruleFrac, ruleExp, ruleNumber,
	ruleBoolean, ruleNull, ruleObject, ruleArray, ruleValue}

// SharedRules returns, as GBNF text, the rules that the grammars Convert
// writes with these options share under fixed names (value, string, ws,
// number, …): a rule of a converted grammar with one of these names has
// this body. A grammar that merges several converted grammars can keep
// one copy of each. (The text has no root rule.)
func SharedRules(opts ...Option) (string, error) {
	o, err := applyOptions(opts)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, name := range primNames {
		fmt.Fprintf(&b, "%s ::= %s\n", name, primBody(name, o))
	}
	return b.String(), nil
}

func primBody(name string, o options) string {
	switch name {
	case ruleWS:
		return fmt.Sprintf(`( " " | "\n" [ \t]{0,%d} )?`, o.maxIndent)
	case ruleValue:
		return "object | array | string | number | boolean | null"
	case ruleObject:
		return seq(`"{"`, wsRef(o), opt(seq(ruleString, `":"`, wsRef(o), ruleValue, rep(paren(seq(`","`, wsRef(o), ruleString, `":"`, wsRef(o), ruleValue)), 0, -1))), wsRef(o), `"}"`)
	case ruleArray:
		return seq(`"["`, wsRef(o), opt(seq(ruleValue, rep(paren(seq(`","`, wsRef(o), ruleValue)), 0, -1))), wsRef(o), `"]"`)
	case ruleString:
		return `"\"" char* "\""`
	case ruleChar:
		// \uXXXX escapes: any BMP character but a surrogate, or a
		// surrogate pair (high then low: one character beyond the BMP,
		// e.g. Python's json.dumps of an emoji); a lone surrogate is not
		// a character and is never accepted
		return `[^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-Ce-fE-F] hex{3} | [dD] ( [0-7] hex{2} | [89abAB] hex{2} "\\u" [dD] [c-fC-F] hex{2} ) ) )`
	case ruleHex:
		return `[0-9a-fA-F]`
	case ruleKChar:
		return `[^"\\\x00-\x1F] | kesc`
	case ruleKEsc:
		return `"\\" ["\\bfnrt] | "\\u000" [0-7bef] | "\\u001" [0-9a-f]`
	case ruleKString:
		return `"\"" kchar* "\""`
	case ruleNumber:
		return bodyNumber
	case ruleInteger:
		return bodyInteger
	case ruleUint:
		return bodyUint
	case ruleNzUint:
		return bodyNzUint
	case ruleFrac:
		return bodyFrac
	case ruleExp:
		return bodyExp
	case ruleFDigits:
		return bodyFDigits
	case ruleFZeros:
		return bodyFZeros
	case ruleBoolean:
		return `"true" | "false"`
	case ruleNull:
		return `"null"`
	}
	panic("unknown primitive " + name)
}

func wsRef(o options) string {
	if o.flexible {
		return ruleWS
	}
	return ""
}

// ws returns the whitespace expression between tokens ("" when compact).
func (c *conv) ws() string {
	if c.o.flexible {
		return c.prim(ruleWS)
	}
	return ""
}

// addPrimDeps adds the primitives that used primitives refer to, and
// scans the schema rules for references to primitives.
func (c *conv) addPrimDeps() {
	scan := func(body string) {
		identRefs(body, func(tok string) {
			if reservedNames[tok] && tok != ruleRoot && tok != ruleEmpty {
				c.prim(tok)
			}
		})
	}
	for _, n := range c.rules.order {
		scan(c.rules.bodies[n])
	}
	for {
		before := len(c.prims)
		for _, b := range c.prims {
			scan(b)
		}
		if len(c.prims) == before {
			break
		}
	}
}

// identRefs calls f with each rule name referenced in a GBNF body
// (skipping literals and classes), in order.
func identRefs(body string, f func(name string)) {
	for i := 0; i < len(body); i++ {
		ch := body[i]
		switch {
		case ch == '"':
			j := closes(body, i, '"')
			if j < 0 {
				return
			}
			i = j
		case ch == '[':
			j := closes(body, i, ']')
			if j < 0 {
				return
			}
			i = j
		case ch == '{':
			for i < len(body) && body[i] != '}' {
				i++
			}
		case isNameByte(ch):
			j := i
			for j < len(body) && isNameByte(body[j]) {
				j++
			}
			f(body[i:j])
			i = j - 1
		}
	}
}

// isNameByte reports whether b may appear in a rule name.
func isNameByte(b byte) bool {
	return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '-'
}

// unsupported records a keyword the grammar cannot enforce. In lenient
// mode it becomes a warning and the caller relaxes the constraint
// (returns true); in strict mode it is an error (returns false).
func (c *conv) unsupported(ptr, keyword, reason string) bool {
	if c.quiet > 0 {
		// analysis only (disjointness proofs, negation): relax silently;
		// the emitting pass reports it.
		return true
	}
	if c.o.lenient {
		k := ptr + "\x00" + keyword + "\x00" + reason
		if !c.warned[k] {
			c.warned[k] = true
			msg := "ignored: the grammar cannot enforce it"
			if reason != "" {
				msg = "ignored: " + reason
			}
			if c.o.warnings != nil {
				*c.o.warnings = append(*c.o.warnings, Warning{Pointer: ptr, Keyword: keyword, Msg: msg})
			}
		}
		return true
	}
	c.errs = append(c.errs, &UnsupportedError{Pointer: ptr, Keyword: keyword, Reason: reason})
	return false
}

// warn records a lenient-mode note that is not a relaxation.
func (c *conv) note(ptr, keyword, msg string) {
	if c.o.lenient && c.o.warnings != nil {
		k := ptr + "\x00" + keyword + "\x00" + msg
		if !c.warned[k] {
			c.warned[k] = true
			*c.o.warnings = append(*c.o.warnings, Warning{Pointer: ptr, Keyword: keyword, Msg: msg})
		}
	}
}

func (c *conv) fail(err error) {
	if c.fatal == nil {
		c.fatal = err
	}
}

// A term is a conjunction of schemas (plus synthetic constraints) that
// one JSON value must satisfy.
type term struct {
	ms   []*jsonschema.Schema
	done []doneMark // disjunctions already expanded
	ex   *extra
	ann  []annLink // in-place links made by expanding disjunctions
}

// annLink records that schema to was applied in place by schema from
// (a branch of from's anyOf/oneOf, if/then/else or dependentSchemas that
// this term chose), so to's annotations reach from: what to evaluates,
// from has evaluated (for unevaluatedProperties/Items). The static
// in-place links ($ref, $dynamicRef, $recursiveRef, allOf) are read from
// the schemas themselves. Schemas that enter a term through a negation
// (not, the failing if, oneOf's excluded branches) have no link: a
// failing subschema produces no annotations.
type annLink struct{ from, to *jsonschema.Schema }

// and conjoins a branch to the term; b's in-place schemas (b.ann) become
// annotation links from owner.
func (t term) and(b branch, owner *jsonschema.Schema) term {
	nt := term{
		ms:   append(append([]*jsonschema.Schema{}, t.ms...), b.ms...),
		done: t.done,
		ex:   t.ex,
		ann:  t.ann,
	}
	if !b.ex.isEmpty() {
		nt.ex = mergeExtra(t.ex, b.ex)
	}
	if len(b.ann) > 0 {
		nt.ann = append([]annLink(nil), t.ann...)
		for _, s := range b.ann {
			nt.ann = append(nt.ann, annLink{owner, s})
		}
	}
	return nt
}

// expand is the term with disjunction g resolved to its branch b.
func (t term) expand(g group, b branch) term {
	t.done = append(append([]doneMark{}, t.done...), doneMark{g.owner, g.kind})
	return t.and(b, g.owner)
}

type doneMark struct {
	s    *jsonschema.Schema
	kind string
}

// group is a disjunction found while flattening a term.
type group struct {
	kind     string // "anyOf", "oneOf", "not", "if", "dependencies"
	owner    *jsonschema.Schema
	ptr      string
	branches []branch
	disjoint bool // oneOf: branches must be provably disjoint
}

type branch struct {
	ms  []*jsonschema.Schema
	ex  *extra
	ann []*jsonschema.Schema // the schemas of ms the group's owner applies in place (their annotations reach it)
}

// flat is a flattened term: the schemas whose own keywords apply, and
// the disjunctions still to expand.
type flat struct {
	atoms  []*jsonschema.Schema
	groups []group
}

func (c *conv) isDone(t term, s *jsonschema.Schema, kind string) bool {
	for _, d := range t.done {
		if d.s == s && d.kind == kind {
			return true
		}
	}
	return false
}

func (c *conv) flatten(t term) flat {
	f := flat{atoms: inPlace(t.ms, nil)}
	// the types the atoms allow bound what a negation must cover
	types := tAll
	for _, s := range f.atoms {
		if len(s.Types) > 0 {
			types &= typeMask(s.Types)
		}
		if s.Always != nil && !*s.Always {
			types = 0
		}
	}
	types &^= t.ex.typesOut()
	var scopes []unevScope // unevaluated keywords whose annotations an anyOf may feed
	if hasUnevaluated(f.atoms) {
		scopes = append(unevScopes(f.atoms, t.ann, false), unevScopes(f.atoms, t.ann, true)...)
	}
	for _, s := range f.atoms {
		ptr := c.ptrOf(s)
		if len(s.AnyOf) > 0 && !c.isDone(t, s, "anyOf") {
			f.groups = append(f.groups, anyOfGroup(s, ptr, scopes))
		}
		if len(s.OneOf) > 0 && !c.isDone(t, s, "oneOf") {
			g := group{kind: "oneOf", owner: s, ptr: ptr, disjoint: true}
			for _, b := range s.OneOf {
				g.branches = append(g.branches, branch{ms: []*jsonschema.Schema{b}, ann: []*jsonschema.Schema{b}})
			}
			f.groups = append(f.groups, g)
		}
		if s.Not != nil && !c.isDone(t, s, "not") {
			if g, ok := c.notGroup(s, types); ok {
				f.groups = append(f.groups, g)
			}
		}
		if s.If != nil && !c.isDone(t, s, "if") {
			if g, ok := c.ifGroup(s, types); ok {
				f.groups = append(f.groups, g)
			}
		}
		if (len(s.Dependencies) > 0 || len(s.DependentRequired) > 0 || len(s.DependentSchemas) > 0) && !c.isDone(t, s, "dependencies") {
			if g, ok := c.depGroup(s); ok {
				f.groups = append(f.groups, g)
			}
		}
	}
	return f
}

// MaxAnnotatedAnyOf bounds the branches of an anyOf that is expanded
// into every non-empty set of its branches (2^n − 1 alternatives) because
// an unevaluated keyword sees its annotations; a larger one is expanded
// branch by branch, a subset (see anyOfGroup).
const MaxAnnotatedAnyOf = 4

// anyOfGroup is the disjunction of an anyOf. Every branch that passes
// contributes its annotations, so where an unevaluated keyword's scope
// holds the anyOf, the alternatives are the non-empty sets of branches
// that pass together: the set of exactly the passing branches counts
// everything they evaluated, and any other set no more than that. With
// one branch per alternative (beyond MaxAnnotatedAnyOf branches), a
// property only another passing branch evaluates is still judged by the
// unevaluated keyword: a subset of the valid documents.
func anyOfGroup(s *jsonschema.Schema, ptr string, scopes []unevScope) group {
	g := group{kind: "anyOf", owner: s, ptr: ptr}
	annotated := false
	for _, us := range scopes {
		annotated = annotated || us.scope[s]
	}
	n := len(s.AnyOf)
	if !annotated || n < 2 || n > MaxAnnotatedAnyOf {
		for _, b := range s.AnyOf {
			g.branches = append(g.branches, branch{ms: []*jsonschema.Schema{b}, ann: []*jsonschema.Schema{b}})
		}
		return g
	}
	for set := 1; set < 1<<n; set++ {
		var b branch
		for i, x := range s.AnyOf {
			if set&(1<<i) != 0 {
				b.ms = append(b.ms, x)
				b.ann = append(b.ann, x)
			}
		}
		g.branches = append(g.branches, b)
	}
	return g
}

// ownKeywords lists the validation keywords a compiled schema holds
// itself (not through $ref or allOf).
func ownKeywords(s *jsonschema.Schema) []string {
	var k []string
	add := func(cond bool, name string) {
		if cond {
			k = append(k, name)
		}
	}
	add(s.Always != nil, "always")
	add(len(s.Types) > 0, "type")
	add(s.Constant != nil, "const")
	add(s.Enum != nil, "enum")
	add(s.Not != nil, "not")
	add(len(s.AnyOf) > 0, "anyOf")
	add(len(s.OneOf) > 0, "oneOf")
	add(s.If != nil, "if")
	add(s.MinProperties >= 0, "minProperties")
	add(s.MaxProperties >= 0, "maxProperties")
	add(len(s.Required) > 0, "required")
	add(len(s.Properties) > 0, "properties")
	add(s.PropertyNames != nil, "propertyNames")
	add(len(s.PatternProperties) > 0, "patternProperties")
	add(s.AdditionalProperties != nil, "additionalProperties")
	add(len(s.Dependencies) > 0, "dependencies")
	add(len(s.DependentRequired) > 0, "dependentRequired")
	add(len(s.DependentSchemas) > 0, "dependentSchemas")
	add(s.UnevaluatedProperties != nil, "unevaluatedProperties")
	add(s.MinItems >= 0, "minItems")
	add(s.MaxItems >= 0, "maxItems")
	add(s.UniqueItems, "uniqueItems")
	add(s.Items != nil, "items")
	add(s.AdditionalItems != nil, "additionalItems")
	add(len(s.PrefixItems) > 0, "prefixItems")
	add(s.Items2020 != nil, "items")
	add(s.Contains != nil, "contains")
	add(s.UnevaluatedItems != nil, "unevaluatedItems")
	add(s.MinLength >= 0, "minLength")
	add(s.MaxLength >= 0, "maxLength")
	add(s.Pattern != nil, "pattern")
	add(s.Format != "" && assertedFormat(s.Format), "format")
	add(s.Minimum != nil, "minimum")
	add(s.Maximum != nil, "maximum")
	add(s.ExclusiveMinimum != nil, "exclusiveMinimum")
	add(s.ExclusiveMaximum != nil, "exclusiveMaximum")
	add(s.MultipleOf != nil, "multipleOf")
	add(s.RecursiveRef != nil, "$recursiveRef")
	add(s.DynamicRef != nil, "$dynamicRef")
	return k
}

// termKey identifies a term by the schemas that constrain it.
func (c *conv) termKey(f flat, t term) string {
	var ids []string
	for _, a := range f.atoms {
		if len(ownKeywords(a)) == 0 {
			continue
		}
		ids = append(ids, fmt.Sprintf("%p", a))
	}
	sort.Strings(ids)
	var ds []string
	for _, d := range t.done {
		ds = append(ds, fmt.Sprintf("%p/%s", d.s, d.kind))
	}
	sort.Strings(ds)
	key := strings.Join(ids, ",") + "|" + strings.Join(ds, ",") + "|" + t.ex.key()
	if hasUnevaluated(f.atoms) {
		// the same schemas with other annotation links evaluate other
		// properties or items
		var ls []string
		for _, l := range t.ann {
			ls = append(ls, fmt.Sprintf("%p>%p", l.from, l.to))
		}
		sort.Strings(ls)
		key += "|" + strings.Join(ls, ",")
	}
	return key
}

// nameFor derives a readable rule name from a JSON pointer.
func nameFor(ptr string) string {
	p := strings.TrimPrefix(ptr, "#")
	if i := strings.Index(ptr, "#"); i > 0 {
		p = ptr[i+1:]
	}
	toks := strings.Split(strings.TrimPrefix(p, "/"), "/")
	var out []string
	skip := map[string]bool{"properties": true, "$defs": true, "definitions": true}
	for i, tok := range toks {
		if tok == "" {
			continue
		}
		if skip[tok] && i+1 < len(toks) {
			continue
		}
		switch tok {
		case "items", "additionalItems", "prefixItems":
			tok = "item"
		case "additionalProperties":
			tok = "additional"
		case "patternProperties":
			tok = "pattern"
		}
		out = append(out, tok)
	}
	if len(out) == 0 {
		return "root"
	}
	// keep the last few components: long pointers make long names
	if len(out) > 4 {
		out = out[len(out)-4:]
	}
	return sanitizeName(strings.Join(out, "-"))
}

// emit returns a grammar expression for a term ("" when unsatisfiable).
func (c *conv) emit(t term, ptrHint string) string {
	if c.fatal != nil {
		return ""
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > MaxNestingDepth*4 {
		c.fail(&LimitError{Pointer: ptrHint, Limit: "MaxNestingDepth", Max: MaxNestingDepth})
		return ""
	}
	f := c.flatten(t)
	key := c.termKey(f, t)
	if x, ok := c.memo[key]; ok {
		if _, reserved := c.refs[x]; reserved {
			c.refs[x]++
		}
		return x
	}
	c.terms++
	if c.terms > MaxTerms {
		c.fail(&LimitError{Pointer: ptrHint, Limit: "MaxTerms", Value: c.terms, Max: MaxTerms})
		return ""
	}
	// name from the first constraining atom
	ptr := ptrHint
	for _, a := range f.atoms {
		if len(ownKeywords(a)) > 0 {
			ptr = c.ptrOf(a)
			break
		}
	}
	var name string
	isRoot := c.rootPending
	if isRoot {
		c.rootPending = false
		name = c.rules.fresh(ruleRoot)
	} else {
		name = c.rules.fresh(nameFor(ptr))
	}
	c.memo[key] = name
	c.refs[name] = 0
	body := c.emitFlat(f, t, ptr)
	if c.fatal != nil {
		return ""
	}
	recursive := c.refs[name] > 0
	delete(c.refs, name)
	if body == "" {
		// unsatisfiable; a recursive reference to it is unsatisfiable too
		// only if every path needs it — keep the rule out and report "".
		c.memo[key] = ""
		if recursive {
			// references were already written; define it as a rule that
			// can never match so the grammar stays well-formed.
			c.rules.define(name, neverMatch)
			return ""
		}
		c.rules.drop(name)
		return ""
	}
	if !recursive && !isRoot {
		if isAtom(body) && (len(body) < 40 || reservedNames[body]) {
			c.rules.drop(name)
			c.memo[key] = body
			return body
		}
		if existing, ok := c.rules.byBody[body]; ok {
			c.rules.drop(name)
			c.memo[key] = existing
			return existing
		}
		c.rules.byBody[body] = name
	}
	c.rules.define(name, stripParens(body))
	if c.rules.size > MaxGrammarBytes {
		c.fail(&LimitError{Pointer: ptr, Limit: "MaxGrammarBytes", Value: c.rules.size, Max: MaxGrammarBytes})
	}
	return name
}

// stripParens removes one pair of enclosing parentheses from a rule body.
func stripParens(x string) string {
	if len(x) >= 2 && x[0] == '(' && closes(x, 0, ')') == len(x)-1 {
		return strings.TrimSpace(x[1 : len(x)-1])
	}
	return x
}

func (c *conv) emitFlat(f flat, t term, ptr string) string {
	for _, a := range f.atoms {
		if a.Always != nil && !*a.Always {
			return ""
		}
	}
	// enum/const: the value set is finite; filter it by every constraint
	// of the term (santhosh-tekuri validates each candidate), which is
	// exact whatever else the schema says.
	for _, a := range f.atoms {
		if a.Enum != nil || a.Constant != nil {
			return c.emitEnum(a, t)
		}
	}
	if len(f.groups) > 0 {
		return c.expandGroup(f.groups[0], t, ptr)
	}
	n := c.merge(f.atoms, t)
	return c.emitNode(n)
}

// expandGroup distributes the term over the branches of one disjunction.
// For oneOf, each branch also excludes the branches it may overlap with
// (B_i and not B_j for every j whose overlap with B_i is not disproved),
// which makes the alternatives disjoint and the grammar exact.
func (c *conv) expandGroup(g group, t term, ptr string) string {
	if len(g.branches) > MaxAlternatives {
		c.fail(&LimitError{Pointer: g.ptr, Limit: "MaxAlternatives", Value: len(g.branches), Max: MaxAlternatives})
		return ""
	}
	var terms []term
	for _, b := range g.branches {
		terms = append(terms, t.expand(g, b))
	}
	var alts []string
	if !g.disjoint {
		for _, nt := range terms {
			x := c.emit(nt, g.ptr)
			if c.fatal != nil {
				return ""
			}
			if x != "" {
				alts = append(alts, x)
			}
		}
		return alt(alts...)
	}
	// oneOf: find overlapping pairs
	n := len(terms)
	c.quiet++
	// each branch summarized once, not once per pair it is in
	sums := make([]summary, n)
	sat := make([]bool, n)
	for i := range terms {
		sums[i] = c.summarize(terms[i])
		sat[i] = c.satisfiableSum(sums[i], 0)
	}
	overlap := make([][]bool, n)
	for i := range overlap {
		overlap[i] = make([]bool, n)
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if sat[i] && sat[j] && !c.disjointSums(sums[i], sums[j]) {
				overlap[i][j], overlap[j][i] = true, true
			}
		}
	}
	c.quiet--
	for i := 0; i < n; i++ {
		if !sat[i] {
			continue
		}
		// each combination is kept as the set of the negation branches it
		// conjoins (by key): equal sets are merged and a set that contains
		// another is dropped (it denotes a subset of the other)
		combos := []branch{{}}
		sets := []map[string]bool{{}}
		ok := true
		for j := 0; j < n && ok; j++ {
			if !overlap[i][j] {
				continue
			}
			b := g.branches[j]
			if len(b.ms) != 1 || !b.ex.isEmpty() {
				ok = false
				break
			}
			nb, r, nok := c.negMode(b.ms[0], 0, true)
			c.quiet++ // a proof: what summarize cannot express is not reported here
			if nok && r&sums[i].types != 0 {
				nok = false
			}
			c.quiet--
			if !nok {
				ok = false
				break
			}
			var next []branch
			var nextSets []map[string]bool
			c.quiet++
			for pi, p := range combos {
				for _, q := range nb {
					qk := branchKey(q)
					set := map[string]bool{qk: true}
					for k := range sets[pi] {
						set[k] = true
					}
					cb := branch{ms: append(append([]*jsonschema.Schema{}, p.ms...), q.ms...), ex: mergeExtra(p.ex, q.ex)}
					if sets[pi][qk] {
						cb = p // q already in the combination
					}
					// drop combinations that contradict the branch itself
					if c.satisfiable(terms[i].and(cb, nil)) {
						next = append(next, cb)
						nextSets = append(nextSets, set)
					}
				}
				if len(next) > 4*MaxOneOfExclusions {
					break
				}
			}
			c.quiet--
			next, nextSets = minimalSets(next, nextSets)
			if len(next) > MaxOneOfExclusions {
				ok = false
				break
			}
			combos, sets = next, nextSets
		}
		if !ok {
			if !c.unsupported(g.ptr, g.kind, "branches overlap and their exclusion has no exact grammar (the grammar cannot ensure that exactly one matches)") {
				return ""
			}
			combos = []branch{{}}
		}
		for _, cb := range combos {
			x := c.emit(terms[i].and(cb, nil), g.ptr)
			if c.fatal != nil {
				return ""
			}
			if x != "" {
				alts = append(alts, x)
			}
		}
	}
	return alt(alts...)
}

// branchKey identifies a negation branch.
func branchKey(b branch) string {
	var ids []string
	for _, s := range b.ms {
		ids = append(ids, fmt.Sprintf("%p", s))
	}
	sort.Strings(ids)
	return strings.Join(ids, ",") + "|" + b.ex.key()
}

// minimalSets keeps one combination per distinct set and drops the sets
// that strictly contain another.
func minimalSets(bs []branch, sets []map[string]bool) ([]branch, []map[string]bool) {
	seen := map[string]bool{}
	var ob []branch
	var os []map[string]bool
	for i, s := range sets {
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		k := setKey(keys)
		if seen[k] {
			continue
		}
		seen[k] = true
		ob, os = append(ob, bs[i]), append(os, s)
	}
	var rb []branch
	var rs []map[string]bool
	for i, s := range os {
		dominated := false
		for j, t := range os {
			if i != j && len(t) < len(s) && subsetOf(t, s) {
				dominated = true
				break
			}
		}
		if !dominated {
			rb, rs = append(rb, ob[i]), append(rs, s)
		}
	}
	return rb, rs
}

func subsetOf(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// satisfiable is a cheap check that a term may have values (false only
// when provably empty).
func (c *conv) satisfiable(t term) bool { return c.satisfiableDepth(t, 0) }

func (c *conv) satisfiableDepth(t term, depth int) bool {
	return c.satisfiableSum(c.summarize(t), depth)
}

// satisfiableSum is satisfiableDepth on a term's summary.
func (c *conv) satisfiableSum(s summary, depth int) bool {
	if s.enum != nil {
		return len(s.enum) > 0
	}
	types := s.types
	if types&tObj != 0 && s.groups == 0 {
		// objects: a required property that is forbidden, disallowed or
		// has no possible value rules objects out
		req := requiredOf(s.n)
		for k := range req {
			if !c.propAllowed(s.n, k) {
				types &^= tObj
				break
			}
			if depth < 2 {
				pt := propTerm(s.n, k)
				if (len(pt.ms) > 0 || !pt.ex.isEmpty()) && !c.satisfiableDepth(pt, depth+1) {
					types &^= tObj
					break
				}
			}
		}
	}
	return types != 0
}

// emitEnum writes the values of an enum/const that satisfy the whole term.
func (c *conv) emitEnum(a *jsonschema.Schema, t term) string {
	var vals []any
	raw, hasRaw := c.l.rawAt(a)
	switch {
	case a.Constant != nil:
		if hasRaw {
			if v, ok := raw.vals["const"]; ok {
				vals = []any{v}
			}
		}
		if vals == nil {
			vals = []any{a.Constant[0]}
		}
	default:
		if hasRaw {
			if arr, ok := raw.vals["enum"].([]any); ok {
				vals = arr
			}
		}
		if vals == nil {
			vals = a.Enum
		}
	}
	if len(vals) > MaxEnumValues {
		c.fail(&LimitError{Pointer: c.ptrOf(a), Limit: "MaxEnumValues", Value: len(vals), Max: MaxEnumValues})
		return ""
	}
	// A value of a's own enum satisfies a's enum keyword: it is judged
	// against the rest of a (a copy without the enum), the validator's
	// enum check being a scan of the list (quadratic over the list).
	own, rest := enumSelf(a, t)
	// A scalar is judged without the anyOfs and oneOfs the term has
	// expanded: the term holds the branch it chose, which implies them
	// (see withoutDoneDisjunctions; scalars, unlike objects and arrays,
	// have no annotations for unevaluated* to read). The validator would
	// otherwise try each branch of each such disjunction again for every
	// value, formatting an error for every branch it fails:
	// Github_ultra/o69209's 16-branch anyOfs of one-value enums spent a
	// fifth of its conversion there, and JsonSchemaStore/base two thirds
	// in a oneOf whose branch is an enum of 571 time zones, scanned
	// again for each of them.
	var scalar [2]*term // judge without the done disjunctions: of t, of rest (made once)
	var alts []string
	seen := map[string]bool{}
	for _, v := range vals {
		pv := toPlain(v)
		k := canonicalJSON(pv)
		if seen[k] {
			continue
		}
		judge, which := t, 0
		if own[k] {
			judge, which = rest, 1
		}
		if isScalar(pv) {
			if scalar[which] == nil {
				x := withoutDoneDisjunctions(judge)
				scalar[which] = &x
			}
			judge = *scalar[which]
		}
		if !c.valueOK(pv, judge) {
			continue
		}
		seen[k] = true
		alts = append(alts, c.literal(v))
	}
	return alt(alts...)
}

// minEnumSelf is the enum length from which emitEnum judges an enum's
// values without the enum itself (below it the scan costs less than the
// copy).
const minEnumSelf = 8

// enumSelf returns, for an enum of at least minEnumSelf values on a
// schema of t (or one its $ref and allOf chains reach, see chainEdit), the
// values of a.Enum (canonical JSON) and t with a replaced by a copy of a
// without its enum (and the schemas of the chain by copies leading to
// it); nil and t otherwise.
func enumSelf(a *jsonschema.Schema, t term) (map[string]bool, term) {
	if a.Constant != nil || len(a.Enum) < minEnumSelf {
		return nil, t
	}
	ce := newChainEdit(func(s *jsonschema.Schema) *jsonschema.Schema {
		if s != a {
			return nil
		}
		b := *a
		b.Enum = nil
		return &b
	})
	for i, m := range t.ms {
		x := ce.apply(m, maxEnumRefs)
		if x == m {
			continue
		}
		own := make(map[string]bool, len(a.Enum))
		for _, e := range a.Enum {
			own[canonicalJSON(toPlain(e))] = true
		}
		rest := t
		rest.ms = slices.Clone(t.ms)
		rest.ms[i] = x
		return own, rest
	}
	return nil, t
}

// maxEnumRefs bounds the $ref and allOf steps enumSelf and
// withoutDoneDisjunctions follow from a schema of a term (a chain of
// definitions is a few long).
const maxEnumRefs = 8

// isScalar reports whether a plain JSON value is neither an object nor an
// array.
func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// withoutDoneDisjunctions returns t with every schema of t.ms that is,
// or that its $ref and allOf chains reach (see chainEdit), the owner of
// an anyOf or a oneOf t has expanded replaced by a copy without it (and
// the chains' schemas by copies leading to it). For a value without
// annotations (a scalar) the copies judge as the originals: t holds the
// branch it chose, which implies an anyOf, and for a oneOf also implies
// that no other branch holds — expandGroup conjoined the exclusion of
// every branch that may overlap it and proved the others disjoint from
// it on weaker terms (proofTerm; where an exclusion has no grammar,
// lenient mode leaves it out and so may this judge, both supersets).
func withoutDoneDisjunctions(t term) term {
	var anyOfs, oneOfs []*jsonschema.Schema
	for _, d := range t.done {
		switch d.kind {
		case "anyOf":
			anyOfs = append(anyOfs, d.s)
		case "oneOf":
			oneOfs = append(oneOfs, d.s)
		}
	}
	if len(anyOfs)+len(oneOfs) == 0 {
		return t
	}
	ce := newChainEdit(func(s *jsonschema.Schema) *jsonschema.Schema {
		dropAny := len(s.AnyOf) > 0 && slices.Contains(anyOfs, s)
		dropOne := len(s.OneOf) > 0 && slices.Contains(oneOfs, s)
		if !dropAny && !dropOne {
			return nil
		}
		b := *s
		if dropAny {
			b.AnyOf = nil
		}
		if dropOne {
			b.OneOf = nil
		}
		return &b
	})
	out := t
	out.ms = slices.Clone(t.ms)
	for i, m := range out.ms {
		out.ms[i] = ce.apply(m, maxEnumRefs)
	}
	return out
}

// maxChainSchemas bounds the schemas one chainEdit looks at: the chains
// of a term are a few schemas long, and a copy is only a shortcut for the
// validator (past the bound, schemas are kept as they are).
const maxChainSchemas = 256

// chainEdit rewrites schemas that a term's schemas apply in place through
// $ref and allOf: edit returns a changed copy of a schema (nil: keep it),
// and the schemas on the way to a changed one are copied to lead to it.
// Each schema is looked at once (memo; one on a $ref cycle is kept), at
// most maxChainSchemas of them (allOf lists that share $refs would
// otherwise be walked once per path).
type chainEdit struct {
	edit func(*jsonschema.Schema) *jsonschema.Schema
	memo map[*jsonschema.Schema]*jsonschema.Schema
}

func newChainEdit(edit func(*jsonschema.Schema) *jsonschema.Schema) *chainEdit {
	return &chainEdit{edit: edit, memo: map[*jsonschema.Schema]*jsonschema.Schema{}}
}

// apply returns m rewritten, following its chains depth steps further: m
// itself when nothing on them changes.
func (ce *chainEdit) apply(m *jsonschema.Schema, depth int) *jsonschema.Schema {
	if r, ok := ce.memo[m]; ok {
		return r
	}
	if len(ce.memo) >= maxChainSchemas {
		return m
	}
	ce.memo[m] = m
	b := ce.edit(m)
	if depth > 0 {
		ref := m.Ref
		if ref != nil {
			ref = ce.apply(ref, depth-1)
		}
		var all []*jsonschema.Schema // m.AllOf, copied on the first change
		for i, x := range m.AllOf {
			if y := ce.apply(x, depth-1); y != x && all == nil {
				all = slices.Clone(m.AllOf)
				all[i] = y
			} else if all != nil {
				all[i] = y
			}
		}
		if ref != m.Ref || all != nil {
			if b == nil {
				c := *m
				b = &c
			}
			b.Ref = ref
			if all != nil {
				b.AllOf = all
			}
		}
	}
	if b == nil {
		return m
	}
	ce.memo[m] = b
	return b
}

// valueOK reports whether a plain JSON value satisfies every schema and
// synthetic constraint of the term.
func (c *conv) valueOK(v any, t term) bool {
	for _, s := range t.ms {
		if err := validateSafe(s, v); err != nil {
			return false
		}
	}
	return c.allows(t.ex, v)
}

// proofTerm is what the proofs about a term (satisfiable, disjointPair)
// may judge values by: t without the schemas that apply a disjunction t
// has expanded (t.done), whose verdict would depend on the very
// disjunction being decided (a value both branches of a oneOf accept
// fails the oneOf, and the proof would wrongly find the branches
// disjoint). Leaving constraints out only makes the proofs weaker.
func (c *conv) proofTerm(t term) term {
	out := term{ex: t.ex}
	for _, s := range t.ms {
		if !c.appliesDone(s, t) {
			out.ms = append(out.ms, s)
		}
	}
	return out
}

// appliesDone reports whether s applies in place a disjunction t has
// expanded.
func (c *conv) appliesDone(s *jsonschema.Schema, t term) bool {
	if len(t.done) == 0 {
		return false
	}
	for _, a := range c.flattenAtoms(s) {
		for _, d := range t.done {
			if d.s == a {
				return true
			}
		}
	}
	return false
}

func validateSafe(s *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("validation panicked: %v", r)
		}
	}()
	return s.Validate(v)
}

func valueType(v any) uint8 {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case string:
		return tStr
	case []any:
		return tArr
	case map[string]any, *ordObj:
		return tObj
	}
	if n, ok := asNumber(v); ok {
		r, ok := new(big.Rat).SetString(n)
		if ok && r.IsInt() {
			return tInt
		}
		return tNum
	}
	return 0
}

// literal writes a JSON value as grammar (canonical encoding; objects
// keep their key order; whitespace allowed where the grammar allows it).
func (c *conv) literal(v any) string {
	var toks []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case *ordObj:
			toks = append(toks, "{")
			for i, k := range v.keys {
				if i > 0 {
					toks = append(toks, ",")
				}
				toks = append(toks, encodeJSONString(k), ":")
				walk(v.vals[k])
			}
			toks = append(toks, "}")
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			toks = append(toks, "{")
			for i, k := range keys {
				if i > 0 {
					toks = append(toks, ",")
				}
				toks = append(toks, encodeJSONString(k), ":")
				walk(v[k])
			}
			toks = append(toks, "}")
		case []any:
			toks = append(toks, "[")
			for i, x := range v {
				if i > 0 {
					toks = append(toks, ",")
				}
				walk(x)
			}
			toks = append(toks, "]")
		default:
			toks = append(toks, canonicalJSON(v))
		}
	}
	walk(v)
	if !c.o.flexible {
		return lit(strings.Join(toks, ""))
	}
	// whitespace after { [ , : and before } ]
	var parts []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			parts = append(parts, lit(cur.String()))
			cur.Reset()
		}
	}
	for i, tk := range toks {
		if (tk == "}" || tk == "]") && i > 0 {
			flush()
			parts = append(parts, c.ws())
		}
		cur.WriteString(tk)
		if tk == "{" || tk == "[" || tk == "," || tk == ":" {
			if !((tk == "{" && i+1 < len(toks) && toks[i+1] == "}") || (tk == "[" && i+1 < len(toks) && toks[i+1] == "]")) {
				flush()
				parts = append(parts, c.ws())
			}
		}
	}
	flush()
	return seq(parts...)
}

// canonicalJSON writes a plain or ordered JSON value compactly with the
// canonical string encoding (objects keep order when ordered, else sorted).
func canonicalJSON(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		if v {
			return "true"
		}
		return "false"
	case string:
		return encodeJSONString(v)
	case *ordObj:
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(encodeJSONString(k))
			b.WriteByte(':')
			b.WriteString(canonicalJSON(v.vals[k]))
		}
		b.WriteByte('}')
		return b.String()
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(encodeJSONString(k))
			b.WriteByte(':')
			b.WriteString(canonicalJSON(v[k]))
		}
		b.WriteByte('}')
		return b.String()
	case []any:
		var b strings.Builder
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(canonicalJSON(x))
		}
		b.WriteByte(']')
		return b.String()
	}
	if n, ok := asNumber(v); ok {
		return n
	}
	return fmt.Sprint(v)
}

// asNumber returns the text of a JSON number value.
func asNumber(v any) (string, bool) {
	switch v := v.(type) {
	case json.Number:
		return string(v), true
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	}
	return "", false
}

func isJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	_, ok := new(big.Rat).SetString(s)
	return ok && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))
}

// neverMatch is a rule body no string matches (a class of nothing).
const neverMatch = `[^\x00-\U0010FFFF]`
