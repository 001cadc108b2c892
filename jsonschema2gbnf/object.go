package jsonschema2gbnf

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Objects. Declared properties appear in schema order (the order of
// first declaration over the merged schemas; names that are required but
// not declared follow, in `required` order); any other keys ("free
// keys") follow them. The free keys exclude the declared names, so a key
// is never matched by two paths with different value schemas; keys are
// written in canonical encoding whenever some key must be excluded.

// MaxPatternProperties bounds the patternProperties (over all merged
// schemas) that may apply to the free keys of one object, and
// MaxPatternCombos the combinations of them that can match one key
// together: the key space is split by which patterns match, one automaton
// per non-empty combination (found by search, pruning empty
// intersections, so mutually exclusive patterns cost one each).
const (
	MaxPatternProperties = 64
	MaxPatternCombos     = 64
)

type objPart struct {
	s          *jsonschema.Schema
	order      []string
	patterns   []patProp
	additional any // nil (absent or true), false, *jsonschema.Schema
}

type patProp struct {
	re  *regexp.Regexp
	src string
	s   *jsonschema.Schema
}

func (c *conv) objParts(n *node) []objPart {
	var parts []objPart
	for _, a := range n.atoms {
		p := objPart{s: a}
		if len(a.Properties) > 0 {
			p.order = c.propertyOrder(a)
		}
		for re, s := range a.PatternProperties {
			p.patterns = append(p.patterns, patProp{re, re.String(), s})
		}
		sort.Slice(p.patterns, func(i, j int) bool { return p.patterns[i].src < p.patterns[j].src })
		switch ap := a.AdditionalProperties.(type) {
		case bool:
			if !ap {
				p.additional = false
			}
		case *jsonschema.Schema:
			p.additional = ap
		}
		parts = append(parts, p)
	}
	return parts
}

// propertyOrder returns the declared names of a schema in document order.
func (c *conv) propertyOrder(s *jsonschema.Schema) []string {
	if raw, ok := c.l.rawAt(s); ok {
		if props, ok := raw.vals["properties"].(*ordObj); ok {
			var out []string
			for _, k := range props.keys {
				if _, ok := s.Properties[k]; ok {
					out = append(out, k)
				}
			}
			if len(out) == len(s.Properties) {
				return out
			}
		}
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type objProp struct {
	name     string
	required bool
	value    string // grammar expression of the value
}

type freeKind struct {
	key   string // grammar expression of the key (quoted)
	value string
}

// objectNames returns the declared names of a merged object node in
// grammar order, and which are required.
func (c *conv) objectNames(n *node, parts []objPart) ([]string, map[string]bool) {
	var names []string
	seen := map[string]bool{}
	for _, p := range parts {
		for _, k := range p.order {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	required := map[string]bool{}
	add := func(r string) {
		required[r] = true
		if !seen[r] {
			seen[r] = true
			names = append(names, r)
		}
	}
	for _, a := range n.atoms {
		for _, r := range a.Required {
			add(r)
		}
	}
	for _, r := range n.ex.require {
		add(r)
	}
	return names, required
}

// declaredTerm returns the term a declared property's value must satisfy;
// ok is false when the property cannot appear.
func (c *conv) declaredTerm(n *node, parts []objPart, propNames []*jsonschema.Schema, k string) (term, bool) {
	for _, f := range n.ex.forbid {
		if f == k {
			return term{}, false
		}
	}
	for _, pn := range propNames {
		if validateSafe(pn, k) != nil {
			return term{}, false
		}
	}
	t := term{}
	for _, p := range parts {
		matched := false
		if s, ok := p.s.Properties[k]; ok {
			t.ms = append(t.ms, s)
			matched = true
		}
		for _, pp := range p.patterns {
			if pp.re.MatchString(k) {
				t.ms = append(t.ms, pp.s)
				matched = true
			}
		}
		if !matched {
			switch ad := p.additional.(type) {
			case bool:
				return term{}, false
			case *jsonschema.Schema:
				t.ms = append(t.ms, ad)
			}
		}
	}
	if pb, ok := n.ex.props[k]; ok {
		t.ms = append(t.ms, pb.ms...)
		t.ex = pb.ex
	}
	ok := addUnevaluated(&t, n.unevP, func(us unevScope) bool { return us.evaluatesKey(k) }, false)
	return t, ok
}

func propertyNamesOf(n *node) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	for _, a := range n.atoms {
		if a.PropertyNames != nil {
			out = append(out, a.PropertyNames)
		}
	}
	return out
}

func (c *conv) emitObject(n *node) string {
	parts := c.objParts(n)
	ptr := n.ptr
	names, required := c.objectNames(n, parts)
	propNames := propertyNamesOf(n)
	var props []objProp
	for _, k := range names {
		t, ok := c.declaredTerm(n, parts, propNames, k)
		var v string
		if ok {
			if len(t.ms) == 0 && t.ex.isEmpty() {
				v = c.prim(ruleValue)
			} else {
				v = c.emit(t, joinPointer(joinPointer(ptr, "properties"), k))
			}
		}
		if c.fatal != nil {
			return ""
		}
		if v == "" {
			if required[k] {
				return ""
			}
			continue
		}
		props = append(props, objProp{name: k, required: required[k], value: v})
	}
	// free keys
	frees, ok := c.freeKinds(n, parts, names, propNames, ptr)
	if !ok {
		return ""
	}
	minP, maxP := -1, -1
	for _, a := range n.atoms {
		if v := c.bound(a, "minProperties", a.MinProperties); v > minP {
			minP = v
		}
		if v := c.bound(a, "maxProperties", a.MaxProperties); v >= 0 && (maxP < 0 || v < maxP) {
			maxP = v
		}
	}
	return c.objectGrammar(n, props, frees, minP, maxP)
}

// freeKinds computes the (key language, value) pairs for keys other than
// the declared names.
func (c *conv) freeKinds(n *node, parts []objPart, names []string, propNames []*jsonschema.Schema, ptr string) ([]freeKind, bool) {
	pats, partOf, owners := patternsOf(parts)
	explicitAdditional := false
	for _, p := range parts {
		if _, ok := p.additional.(*jsonschema.Schema); ok {
			explicitAdditional = true
		}
	}
	// property names: a string language every key must be in
	pnInclude, pnNames, pnOK := c.propertyNamesLang(propNames, ptr)
	if !pnOK {
		return nil, false
	}
	exclude := append([]string(nil), names...)
	exclude = append(exclude, n.ex.forbid...)
	masks, ok := c.patternCombos(pats)
	if !ok {
		if !c.unsupported(ptr, "patternProperties", fmt.Sprintf("more than %d patterns, or more than %d combinations of them, apply to the same object", MaxPatternProperties, MaxPatternCombos)) {
			return nil, false
		}
		// lenient: any key but the declared ones, any value (a superset)
		key := c.keyLang(nil, nil, exclude, ptr)
		if key == "" {
			return nil, true
		}
		return []freeKind{{key, c.prim(ruleValue)}}, true
	}
	var out []freeKind
	for _, mask := range masks {
		t := term{}
		dead := false
		matchedPart := map[int]bool{}
		var include, excl []patRef
		include = append(include, pnInclude...)
		for i, pp := range pats {
			if mask&(uint64(1)<<i) != 0 {
				t.ms = append(t.ms, pp.s)
				matchedPart[partOf[i]] = true
				include = append(include, patRef{pp.src, ptr})
			} else {
				excl = append(excl, patRef{pp.src, ptr})
			}
		}
		for pi, p := range parts {
			if matchedPart[pi] {
				continue
			}
			switch ad := p.additional.(type) {
			case bool:
				dead = true
			case *jsonschema.Schema:
				t.ms = append(t.ms, ad)
			}
		}
		if mask == 0 && c.o.noAdditional && !explicitAdditional {
			dead = true
		}
		if !dead && !addUnevaluated(&t, n.unevP, func(us unevScope) bool { return us.evaluatesFree(mask, owners) }, false) {
			dead = true
		}
		if dead {
			continue
		}
		// finite key set from propertyNames enum
		var key string
		if pnNames != nil {
			var ks []string
			for _, k := range pnNames {
				if contains(exclude, k) {
					continue
				}
				ok := true
				for _, p := range include {
					if re, err := c.regexp(p.src); err != nil || !re.MatchString(k) {
						ok = false
					}
				}
				for _, p := range excl {
					if re, err := c.regexp(p.src); err == nil && re.MatchString(k) {
						ok = false
					}
				}
				if ok {
					ks = append(ks, k)
				}
			}
			var alts []string
			for _, k := range ks {
				alts = append(alts, lit(encodeJSONString(k)))
			}
			key = alt(alts...)
		} else if len(include) == 0 && len(excl) == 0 && len(exclude) == 0 {
			key = c.prim(ruleString)
		} else {
			key = c.keyLang(include, excl, exclude, ptr)
		}
		if c.fatal != nil {
			return nil, false
		}
		if key == "" {
			continue
		}
		var v string
		if len(t.ms) == 0 {
			v = c.prim(ruleValue)
		} else {
			v = c.emit(t, joinPointer(ptr, "additionalProperties"))
		}
		if c.fatal != nil {
			return nil, false
		}
		if v == "" {
			continue
		}
		out = append(out, freeKind{key, v})
	}
	return out, true
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// propertyNamesLang turns propertyNames schemas into key constraints:
// patterns every key must match, or a finite name set (enum/const).
// Other keywords are checked against declared names only; for free keys
// they are unsupported.
func (c *conv) propertyNamesLang(pns []*jsonschema.Schema, ptr string) ([]patRef, []string, bool) {
	var include []patRef
	var names []string
	finite := false
	for _, pn := range pns {
		f := c.flatten(term{ms: []*jsonschema.Schema{pn}})
		if len(f.groups) > 0 {
			if !c.unsupported(c.ptrOf(pn), "propertyNames", "only pattern, length, format and enum/const constraints on names are supported") {
				return nil, nil, false
			}
			continue
		}
		for _, a := range f.atoms {
			if a.Always != nil && !*a.Always {
				return nil, []string{}, true
			}
			if a.Enum != nil || a.Constant != nil {
				vals := a.Enum
				if a.Constant != nil {
					vals = a.Constant
				}
				var ks []string
				for _, v := range vals {
					if s, ok := v.(string); ok && validateSafe(pn, s) == nil {
						ks = append(ks, s)
					}
				}
				if finite {
					names = intersectStrings(names, ks)
				} else {
					names, finite = ks, true
				}
			}
			if a.Pattern != nil {
				include = append(include, patRef{a.Pattern.String(), c.ptrOf(a)})
			}
			if a.Format != "" && assertedFormat(a.Format) {
				if re, ok := formatRegex(a.Format); ok {
					include = append(include, patRef{re, c.ptrOf(a)})
				} else if !c.unsupported(c.ptrOf(a), "format", noGrammar(a.Format)) {
					return nil, nil, false
				}
			}
			if a.MinLength > 0 || a.MaxLength >= 0 {
				lo, hi := a.MinLength, a.MaxLength
				if lo < 0 {
					lo = 0
				}
				src := fmt.Sprintf(`^(?s:.){%d,}$`, lo)
				if hi >= 0 {
					src = fmt.Sprintf(`^(?s:.){%d,%d}$`, lo, hi)
				}
				if hi > 1000 || lo > 1000 {
					if !c.unsupported(c.ptrOf(a), "propertyNames", "length bounds over 1000 on names") {
						return nil, nil, false
					}
				} else {
					include = append(include, patRef{src, c.ptrOf(a)})
				}
			}
			for _, kw := range ownKeywords(a) {
				switch kw {
				case "type", "enum", "const", "pattern", "format", "minLength", "maxLength":
				default:
					if !c.unsupported(c.ptrOf(a), "propertyNames", "keyword "+kw+" inside propertyNames") {
						return nil, nil, false
					}
				}
			}
		}
	}
	if finite {
		if names == nil {
			names = []string{} // no name at all (nil would mean no finite set)
		}
		return include, names, true
	}
	return include, nil, true
}

func intersectStrings(a, b []string) []string {
	var out []string
	for _, x := range a {
		if contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// objectGrammar writes "{" declared-in-order free* "}" with commas.
func (c *conv) objectGrammar(n *node, props []objProp, frees []freeKind, minP, maxP int) string {
	ws := c.ws()
	nReq := 0
	for _, p := range props {
		if p.required {
			nReq++
		}
	}
	nMax := len(props)
	if len(frees) > 0 {
		nMax = -1
	}
	// min/maxProperties
	if maxP >= 0 && maxP < nReq {
		return ""
	}
	if minP >= 0 && nMax >= 0 && minP > nMax {
		return ""
	}
	needMin := minP > nReq
	needMax := maxP >= 0 && (nMax < 0 || maxP < nMax)
	kvs := make([]string, len(props))
	for i, p := range props {
		kvs[i] = seq(lit(encodeJSONString(p.name)), `":"`, ws, p.value)
	}
	var free string
	if len(frees) > 0 {
		var alts []string
		for _, f := range frees {
			alts = append(alts, seq(f.key, `":"`, ws, f.value))
		}
		free = alt(alts...)
		if !isAtom(free) {
			free = c.rules.shared(nameFor(n.ptr)+"-additional-kv", stripParens(free))
		}
	}
	if needMin || needMax {
		return c.countedObject(n, props, kvs, free, minP, maxP)
	}
	if c.o.anyOrder && len(props) > 1 && len(props) <= MaxAnyOrderProperties {
		return c.anyOrderObject(n, props, kvs, free)
	}
	if len(props) == 0 && len(frees) == 1 && frees[0].key == ruleString && frees[0].value == ruleValue {
		return c.prim(ruleObject) // unconstrained: the shared rule
	}
	comma := func(x string) string { return seq(`","`, ws, x) }
	// tail after the declared items: free kvs
	freeTail := ""
	freeFirst := ""
	if free != "" {
		freeTail = rep(paren(comma(free)), 0, -1)
		freeFirst = seq(free, freeTail)
	}
	m := len(props)
	// flat(j): items j.. when something is already written
	flat := func(j int) string {
		var xs []string
		for i := j; i < m; i++ {
			if props[i].required {
				xs = append(xs, comma(kvs[i]))
			} else {
				xs = append(xs, opt(comma(kvs[i])))
			}
		}
		xs = append(xs, freeTail)
		return seq(xs...)
	}
	f := m // first required
	for i, p := range props {
		if p.required {
			f = i
			break
		}
	}
	var content string
	emptyOK := false
	switch {
	case m == 0:
		content = freeFirst
		emptyOK = true
	case f < m:
		// The optional items before the first required one, each
		// followed by its comma, then the required one: one copy of the
		// chain after it.
		var xs []string
		for j := 0; j < f; j++ {
			xs = append(xs, opt(seq(kvs[j], `","`, ws)))
		}
		content = seq(append(xs, kvs[f], flat(f+1))...)
	default:
		// No required item: the first written item is one of 0..m-1 (or
		// a free key).
		rest := make([]string, m+1) // rest[j]: after item j-1, items j.. with commas
		base := nameFor(n.ptr)
		useRules := m > 2
		for j := m; j >= 1; j-- {
			var body string
			if j == m {
				body = flat(j)
			} else {
				body = seq(opt(comma(kvs[j])), rest[j+1])
			}
			if useRules && j < m {
				name := c.rules.fresh(fmt.Sprintf("%s-rest-%d", base, j))
				c.rules.define(name, body)
				rest[j] = name
			} else {
				rest[j] = paren(body)
				if body == `""` {
					rest[j] = ""
				}
			}
		}
		var alts []string
		for j := 0; j < m; j++ {
			alts = append(alts, seq(kvs[j], rest[j+1]))
		}
		if freeFirst != "" {
			alts = append(alts, freeFirst)
		}
		emptyOK = true
		content = alt(alts...)
	}
	if content == "" || content == `""` {
		return seq(`"{"`, ws, `"}"`)
	}
	if emptyOK {
		content = opt(content)
	}
	return seq(`"{"`, ws, content, ws, `"}"`)
}

// MaxCountedObjectStates bounds the (position, count) states of an
// object whose minProperties/maxProperties bind: states are the declared
// properties not yet passed (m+1 positions) times the count that still
// matters (0..maxProperties, or 0..minProperties when there is no
// maximum), so 4096 admits 200 optional properties with maxProperties 19,
// or 2,000 with minProperties 1. Each state is one grammar rule of a few
// references (≈60 bytes): the largest object allowed writes ≈250 KB of
// grammar, converted in ≈30 ms and compiled by mask in ≈0.5 s on the
// Llama-3 vocabulary (measured; BenchmarkCountedObject).
const MaxCountedObjectStates = 4096

// countedObject writes an object whose number of properties is bounded:
// one rule per state (next declared item i, properties written so far
// k). k counts up to the bound that binds — maxProperties when there is
// one, else minProperties (past it the count no longer matters) — so the
// grammar has O(m·bound) rules, each a few references long: every state
// longer than a short atom is a rule of its own, and so is every long
// key-value pair, so that no state's text is pasted into another's.
func (c *conv) countedObject(n *node, props []objProp, kvs []string, free string, minP, maxP int) string {
	ws := c.ws()
	m := len(props)
	kcap := minP // the count that still matters
	keyword := "minProperties"
	if maxP >= 0 {
		kcap, keyword = maxP, "maxProperties"
	}
	kcap = max(min(kcap, m+1), 0)
	if (m+1)*(kcap+1) > MaxCountedObjectStates {
		if !c.unsupported(n.ptr, keyword, fmt.Sprintf("%d properties counted up to %d need %d grammar states (limit MaxCountedObjectStates = %d)", m, kcap, (m+1)*(kcap+1), MaxCountedObjectStates)) {
			return ""
		}
		return c.objectGrammar(n, props, nil, -1, -1)
	}
	base := nameFor(n.ptr) + "-cnt"
	// Long key-value pairs are referenced by name: each appears in up to
	// kcap+1 states.
	refs := make([]string, m)
	for i, kv := range kvs {
		refs[i] = kv
		if len(kv) > countedInline {
			refs[i] = c.rules.shared(fmt.Sprintf("%s-kv-%d", base, i), kv)
		}
	}
	// free keys: after the declared ones, count k written so far: free
	// repetitions in [minP-k, maxP-k]. More than one free key needed for
	// the minimum cannot be ensured (the same key may repeat).
	freeTail := func(k int) string {
		lo := 0
		if minP > k {
			lo = minP - k
		}
		hi := -1
		if maxP >= 0 {
			hi = maxP - k
			if hi < 0 {
				return ""
			}
		}
		if free == "" {
			if lo > 0 {
				return ""
			}
			return `""`
		}
		if lo > 1 {
			c.unsupported(n.ptr, "minProperties", "the minimum needs more than one additional property, and the grammar cannot keep their names distinct")
			lo = 1
		}
		if k == 0 {
			if hi == 0 {
				if lo > 0 {
					return ""
				}
				return `""`
			}
			first := seq(free, rep(paren(seq(`","`, ws, free)), max(0, lo-1), decr(hi)))
			if lo == 0 {
				return opt(first)
			}
			return first
		}
		return rep(paren(seq(`","`, ws, free)), lo, hi)
	}
	memo := make([]string, (m+1)*(kcap+1))
	done := make([]bool, len(memo))
	var state func(i, k int) string
	state = func(i, k int) string {
		if done[i*(kcap+1)+k] {
			return memo[i*(kcap+1)+k]
		}
		var x string
		if i == m {
			x = freeTail(k)
		} else {
			sep := ""
			if k > 0 {
				sep = seq(`","`, ws)
			}
			var alts []string
			if maxP < 0 || k < maxP {
				if next := state(i+1, min(k+1, kcap)); next != "" {
					alts = append(alts, seq(sep, refs[i], next))
				}
			}
			if !props[i].required {
				if skip := state(i+1, k); skip != "" {
					alts = append(alts, skip)
				}
			}
			x = alt(alts...)
		}
		if len(x) > countedInline && c.fatal == nil {
			name := c.rules.fresh(fmt.Sprintf("%s-%d-%d", base, i, k))
			c.rules.define(name, stripParens(x))
			if c.rules.size > MaxGrammarBytes {
				c.fail(&LimitError{Pointer: n.ptr, Limit: "MaxGrammarBytes", Value: c.rules.size, Max: MaxGrammarBytes})
			}
			x = name
		}
		memo[i*(kcap+1)+k], done[i*(kcap+1)+k] = x, true
		return x
	}
	content := state(0, 0)
	if content == "" || c.fatal != nil {
		return ""
	}
	return seq(`"{"`, ws, content, ws, `"}"`)
}

// countedInline is the longest text a counted object's state or
// key-value pair may have and still be written in place rather than as a
// rule: short enough that no state's text can grow by pasting others.
const countedInline = 60

func decr(hi int) int {
	if hi < 0 {
		return -1
	}
	return hi - 1
}

// anyOrderObject writes an object whose declared properties may come in
// any order: one rule per set of properties already written.
func (c *conv) anyOrderObject(n *node, props []objProp, kvs []string, free string) string {
	ws := c.ws()
	m := len(props)
	reqMask := 0
	for i, p := range props {
		if p.required {
			reqMask |= 1 << i
		}
	}
	base := nameFor(n.ptr) + "-set"
	names := map[int]string{}
	var state func(mask int) string
	state = func(mask int) string {
		if x, ok := names[mask]; ok {
			return x
		}
		name := c.rules.fresh(fmt.Sprintf("%s-%x", base, mask))
		names[mask] = name
		var alts []string
		sep := ""
		if mask != 0 {
			sep = seq(`","`, ws)
		}
		for i := 0; i < m; i++ {
			if mask&(1<<i) == 0 {
				alts = append(alts, seq(sep, kvs[i], state(mask|1<<i)))
			}
		}
		if mask&reqMask == reqMask {
			if free != "" {
				if mask == 0 {
					alts = append(alts, seq(free, rep(paren(seq(`","`, ws, free)), 0, -1)))
				} else {
					alts = append(alts, seq(rep(paren(seq(`","`, ws, free)), 1, -1)))
				}
			}
			alts = append(alts, `""`)
		}
		c.rules.define(name, strings.Join(dedup(alts), " | "))
		return name
	}
	return seq(`"{"`, ws, state(0), ws, `"}"`)
}

func dedup(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// patternCombos returns the sets of patterns (bit masks) whose patterns
// can all match one key, the empty set included.
func (c *conv) patternCombos(pats []patProp) ([]uint64, bool) {
	if len(pats) > MaxPatternProperties {
		return nil, false
	}
	ds := make([]*dfa, len(pats))
	for i, p := range pats {
		var err error
		if ds[i], err = c.patternDFA(p.src, nil); err != nil {
			return nil, false
		}
	}
	var out []uint64
	var walk func(i int, mask uint64, d *dfa) bool
	walk = func(i int, mask uint64, d *dfa) bool {
		if i == len(pats) {
			out = append(out, mask)
			return len(out) <= MaxPatternCombos
		}
		if !walk(i+1, mask, d) {
			return false
		}
		nd := ds[i]
		if d != nil {
			if disjointDFA(d, ds[i]) {
				return true
			}
			var err error
			if nd, err = c.intersect(d, ds[i]); err != nil {
				return false
			}
		}
		if nd.isEmpty() {
			return true
		}
		return walk(i+1, mask|uint64(1)<<i, nd)
	}
	if !walk(0, 0, nil) {
		return nil, false
	}
	return out, true
}

// patternsOf lists the patternProperties of the parts: pats[i] belongs
// to parts[partOf[i]], whose schema is owners[i].
func patternsOf(parts []objPart) (pats []patProp, partOf map[int]int, owners []*jsonschema.Schema) {
	partOf = map[int]int{}
	for pi, p := range parts {
		for _, pp := range p.patterns {
			partOf[len(pats)] = pi
			pats = append(pats, pp)
			owners = append(owners, p.s)
		}
	}
	return pats, partOf, owners
}
