package jsonschema2gbnf

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Rewrites of the keywords that are not plain constraints: not, if/then/
// else, dependencies, and the disjointness proof oneOf needs. Each
// rewrite is exact; what has no exact rewrite is reported as unsupported.

// MaxDependencyKeys bounds the dependencies/dependentRequired/
// dependentSchemas keys of one object schema: each key splits the object
// into "absent" and "present" cases (2^n branches).
const MaxDependencyKeys = 6

// notSimple returns synthetic constraints equivalent to `not s`, when
// s has one of the shapes below; ok is false otherwise.
//
//	{} / true            → nothing is valid
//	false                → no constraint
//	{type}               → those types excluded
//	{enum} {const}       → those values excluded (with type: the values of those types)
//	{required:[p]}       → objects must not have p
//	{pattern} (+type)    → strings must not match; other types per type
//	{properties:{p:S}}   → objects have p, and its value satisfies not S
//	{anyOf:[A,B,…]}      → not A and not B …
func (c *conv) notSimple(s *jsonschema.Schema) (*extra, bool) {
	f := c.flatten(term{ms: []*jsonschema.Schema{s}})
	ex := &extra{}
	if len(f.groups) > 0 {
		// only a pure anyOf: not (A or B) = not A and not B
		if len(f.groups) != 1 || f.groups[0].kind != "anyOf" {
			return nil, false
		}
		for _, a := range f.atoms {
			for _, kw := range ownKeywords(a) {
				if kw != "anyOf" {
					return nil, false
				}
			}
		}
		for _, b := range f.groups[0].branches {
			if len(b.ms) != 1 {
				return nil, false
			}
			e, ok := c.notSimple(b.ms[0])
			if !ok {
				return nil, false
			}
			ex = mergeExtra(ex, e)
		}
		return ex, true
	}
	kws := map[string]bool{}
	types := tAll
	for _, a := range f.atoms {
		if a.Always != nil {
			if !*a.Always {
				return &extra{}, true // not false
			}
			continue
		}
		for _, kw := range ownKeywords(a) {
			kws[kw] = true
		}
		if len(a.Types) > 0 {
			types &= typeMask(a.Types)
		}
	}
	delete(kws, "always")
	onlyKeys := func(allowed ...string) bool {
		for k := range kws {
			ok := false
			for _, a := range allowed {
				if k == a {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		return true
	}
	switch {
	case len(kws) == 0:
		ex.notTypes = tAll
		return ex, true
	case onlyKeys("type"):
		ex.notTypes = types
		return ex, true
	case onlyKeys("type", "enum", "const"):
		for _, a := range f.atoms {
			vals := a.Enum
			if a.Constant != nil {
				vals = a.Constant
			}
			for _, v := range vals {
				if validateSafe(s, v) == nil {
					ex.notVals = append(ex.notVals, v)
				}
			}
			if vals != nil {
				break
			}
		}
		return ex, true
	case onlyKeys("required"):
		var req []string
		for _, a := range f.atoms {
			req = append(req, a.Required...)
		}
		req = dedup(req)
		if len(req) != 1 {
			return nil, false
		}
		ex.forbid = req
		return ex, true
	case onlyKeys("type", "pattern"):
		ex.notTypes = types &^ tStr
		if types&tStr != 0 {
			for _, a := range f.atoms {
				if a.Pattern != nil {
					ex.notPats = append(ex.notPats, patRef{a.Pattern.String(), pointerOf(a)})
				}
			}
		}
		return ex, true
	case onlyKeys("type", "properties"):
		var props []*jsonschema.Schema
		var names []string
		for _, a := range f.atoms {
			for k, v := range a.Properties {
				names = append(names, k)
				props = append(props, v)
			}
		}
		if len(names) != 1 {
			return nil, false
		}
		pe, ok := c.notSimple(props[0])
		if !ok {
			return nil, false
		}
		ex.notTypes = types &^ tObj
		if types&tObj != 0 {
			ex.require = names
			ex.propEx = map[string]*extra{names[0]: pe}
		}
		return ex, true
	}
	return nil, false
}

// notGroup rewrites `not` shapes that are disjunctions:
// {required:[a,b,…]} → an object lacks a, or lacks b, …
func (c *conv) notGroup(s *jsonschema.Schema) (group, bool) {
	n := s.Not
	f := c.flatten(term{ms: []*jsonschema.Schema{n}})
	if len(f.groups) > 0 {
		return group{}, false
	}
	var req []string
	for _, a := range f.atoms {
		for _, kw := range ownKeywords(a) {
			if kw != "required" {
				return group{}, false
			}
		}
		req = append(req, a.Required...)
	}
	req = dedup(req)
	if len(req) < 2 {
		return group{}, false
	}
	g := group{kind: "not", owner: s, ptr: pointerOf(s)}
	for _, r := range req {
		g.branches = append(g.branches, branch{ex: &extra{forbid: []string{r}}})
	}
	return g, true
}

func (c *conv) notHandledAsGroup(s *jsonschema.Schema) bool {
	_, ok := c.notGroup(s)
	return ok
}

// ifGroup rewrites if/then/else as (if and then) or (not if and else),
// when not-if has a simple form.
func (c *conv) ifGroup(s *jsonschema.Schema) (group, bool) {
	nif, ok := c.notSimple(s.If)
	if !ok {
		return group{}, false
	}
	g := group{kind: "if", owner: s, ptr: pointerOf(s)}
	b1 := branch{ms: []*jsonschema.Schema{s.If}}
	if s.Then != nil {
		b1.ms = append(b1.ms, s.Then)
	}
	b2 := branch{ex: nif}
	if s.Else != nil {
		b2.ms = append(b2.ms, s.Else)
	}
	g.branches = []branch{b1, b2}
	return g, true
}

// depGroup rewrites dependencies/dependentRequired/dependentSchemas as a
// case split on which trigger properties are present.
func (c *conv) depGroup(s *jsonschema.Schema) (group, bool) {
	type dep struct {
		req []string
		sch []*jsonschema.Schema
	}
	deps := map[string]*dep{}
	get := func(k string) *dep {
		if deps[k] == nil {
			deps[k] = &dep{}
		}
		return deps[k]
	}
	for k, v := range s.Dependencies {
		switch v := v.(type) {
		case []string:
			get(k).req = append(get(k).req, v...)
		case *jsonschema.Schema:
			get(k).sch = append(get(k).sch, v)
		}
	}
	for k, v := range s.DependentRequired {
		get(k).req = append(get(k).req, v...)
	}
	for k, v := range s.DependentSchemas {
		get(k).sch = append(get(k).sch, v)
	}
	if len(deps) > MaxDependencyKeys {
		return group{}, false
	}
	keys := make([]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	g := group{kind: "dependencies", owner: s, ptr: pointerOf(s)}
	for mask := 0; mask < 1<<len(keys); mask++ {
		b := branch{ex: &extra{}}
		for i, k := range keys {
			if mask&(1<<i) != 0 {
				b.ex.require = append(b.ex.require, k)
				b.ex.require = append(b.ex.require, deps[k].req...)
				b.ms = append(b.ms, deps[k].sch...)
			} else {
				b.ex.forbid = append(b.ex.forbid, k)
			}
		}
		b.ex.require = dedup(b.ex.require)
		g.branches = append(g.branches, b)
	}
	return g, true
}

// disjoint reports whether no JSON value satisfies two of the terms
// (a sufficient check: false means "not proven").
func (c *conv) disjoint(ts []term) bool {
	for i := range ts {
		for j := i + 1; j < len(ts); j++ {
			if !c.disjointPair(ts[i], ts[j]) {
				return false
			}
		}
	}
	return true
}

// summary is what the disjointness proof looks at in a term.
type summary struct {
	types  uint8
	enum   []any // nil: not finite
	n      *node
	groups int
}

func (c *conv) summarize(t term) summary {
	f := c.flatten(t)
	n := c.merge(f.atoms, t)
	s := summary{types: n.types, n: n, groups: len(f.groups)}
	for _, a := range f.atoms {
		if a.Enum != nil || a.Constant != nil {
			vals := a.Enum
			if a.Constant != nil {
				vals = a.Constant
			}
			for _, v := range vals {
				if c.valueOK(v, t) {
					s.enum = append(s.enum, v)
				}
			}
			if s.enum == nil {
				s.enum = []any{}
			}
			break
		}
	}
	return s
}

func (c *conv) disjointPair(a, b term) bool {
	sa, sb := c.summarize(a), c.summarize(b)
	if sa.enum != nil {
		for _, v := range sa.enum {
			if c.valueOK(v, b) {
				return false
			}
		}
		return true
	}
	if sb.enum != nil {
		for _, v := range sb.enum {
			if c.valueOK(v, a) {
				return false
			}
		}
		return true
	}
	common := sa.types & sb.types
	if sa.groups > 0 || sb.groups > 0 {
		// inner disjunctions: only the type test is safe
		return common == 0
	}
	for bit := uint8(1); bit != 0 && bit <= tNum; bit <<= 1 {
		if common&bit == 0 {
			continue
		}
		switch bit {
		case tInt, tNum:
			if !numbersDisjoint(sa.n, sb.n) {
				return false
			}
		case tObj:
			if !c.objectsDisjoint(sa.n, sb.n) {
				return false
			}
		case tStr:
			if !c.stringsDisjoint(sa.n, sb.n) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func numbersDisjoint(a, b *node) bool {
	// b entirely below a, or above
	below := func(x, y *node) bool { // every x < every y
		if x.hi == nil || y.lo == nil {
			return false
		}
		c := x.hi.Cmp(y.lo)
		return c < 0 || (c == 0 && (x.hiEx || y.loEx))
	}
	return below(a, b) || below(b, a)
}

// objectsDisjoint looks for a property both require whose values are
// disjoint, or one required by one side and impossible on the other.
func (c *conv) objectsDisjoint(a, b *node) bool {
	reqA, reqB := requiredOf(a), requiredOf(b)
	for p := range reqA {
		if !c.propAllowed(b, p) {
			return true
		}
	}
	for p := range reqB {
		if !c.propAllowed(a, p) {
			return true
		}
	}
	for p := range reqA {
		if !reqB[p] {
			continue
		}
		ta, tb := propTerm(a, p), propTerm(b, p)
		if len(ta.ms) == 0 && ta.ex.isEmpty() || len(tb.ms) == 0 && tb.ex.isEmpty() {
			continue
		}
		if c.disjointPair(ta, tb) {
			return true
		}
	}
	return false
}

func requiredOf(n *node) map[string]bool {
	r := map[string]bool{}
	for _, a := range n.atoms {
		for _, p := range a.Required {
			r[p] = true
		}
	}
	for _, p := range n.ex.require {
		r[p] = true
	}
	return r
}

// propAllowed reports whether an object of n may have property p.
func (c *conv) propAllowed(n *node, p string) bool {
	for _, f := range n.ex.forbid {
		if f == p {
			return false
		}
	}
	for _, a := range n.atoms {
		if _, ok := a.Properties[p]; ok {
			continue
		}
		matched := false
		for re := range a.PatternProperties {
			if re.MatchString(p) {
				matched = true
			}
		}
		if matched {
			continue
		}
		if b, ok := a.AdditionalProperties.(bool); ok && !b {
			return false
		}
	}
	return true
}

func propTerm(n *node, p string) term {
	var t term
	for _, a := range n.atoms {
		if s, ok := a.Properties[p]; ok {
			t.ms = append(t.ms, s)
		}
		for re, s := range a.PatternProperties {
			if re.MatchString(p) {
				t.ms = append(t.ms, s)
			}
		}
	}
	if pe, ok := n.ex.propEx[p]; ok {
		t.ex = pe
	}
	return t
}

// stringsDisjoint intersects the string languages when both sides have
// patterns or formats.
func (c *conv) stringsDisjoint(a, b *node) bool {
	langs := func(n *node) []patRef {
		var out []patRef
		out = append(out, n.pats...)
		for _, f := range n.fmts {
			if re, ok := formatRegex(f.src); ok {
				out = append(out, patRef{re, f.ptr})
			}
		}
		return out
	}
	la, lb := langs(a), langs(b)
	if len(la) == 0 && len(lb) == 0 {
		return false
	}
	d := dfaAll(nil)
	for _, p := range append(la, lb...) {
		re, err := parsePattern(p.src)
		if err != nil {
			return false
		}
		rd, err := regexDFA(re, true)
		if err != nil {
			return false
		}
		if d, err = intersectDFA(d, rd); err != nil {
			return false
		}
	}
	lo := max(a.minLen, b.minLen)
	hi := a.maxLen
	if hi < 0 || (b.maxLen >= 0 && b.maxLen < hi) {
		hi = b.maxLen
	}
	if lo > 0 || hi >= 0 {
		if hi >= 0 && lo > hi {
			return true
		}
		ld, err := dfaLength(lo, hi)
		if err != nil {
			return false
		}
		if d, err = intersectDFA(d, ld); err != nil {
			return false
		}
	}
	return d.isEmpty()
}

var _ = fmt.Sprint
var _ = big.NewInt
