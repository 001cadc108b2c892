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

// MaxNegBranches bounds the branches one negation (not, the else side
// of if, the exclusions oneOf needs) may expand into.
const MaxNegBranches = 64

// maxNegDepth bounds the nesting of negations through properties (a
// recursive schema would otherwise recurse forever).
const maxNegDepth = 8

// neg returns branches whose union is the set of values that do not
// satisfy s, and residual: the types of the values the branches miss.
// A keyword is about values of one type and is satisfied by every value
// of another, so its negation keeps only its own type; when the negation
// of a keyword has no grammar, the values it would add are all of that
// keyword's type, which residual records. The branches are exact outside
// the residual types: a caller whose values cannot have those types may
// use them as the exact negation. ok is false when s cannot be negated at
// all (depth, size).
//
//	type T              → the other types
//	enum/const V        → values outside V
//	required [a, b]     → object without a | object without b
//	properties {p: S}   → object with p whose value satisfies not S (per p)
//	pattern, min/maxLength, exact formats → string not matching
//	minimum … exclusiveMaximum            → number on the other side
//	minItems/maxItems   → array with fewer/more items
//	items S (no prefix) → array containing an item that satisfies not S
//	not S               → S
//	anyOf [A, B]        → (not A) and (not B)
func (c *conv) neg(s *jsonschema.Schema, depth int) (out []branch, residual uint8, ok bool) {
	return c.negMode(s, depth, false)
}

// negMode is neg; with subset set (oneOf exclusions only), the negation
// of a property that the schema also requires may leave out what has no
// exact grammar: "p present with a value not S" is then only the part
// that is expressible (see expandGroup).
func (c *conv) negMode(s *jsonschema.Schema, depth int, subset bool) (out []branch, residual uint8, ok bool) {
	if depth > maxNegDepth {
		return nil, 0, false
	}
	c.quiet++
	defer func() { c.quiet-- }()
	f := c.flattenAtoms(s)
	add := func(b branch) bool {
		out = append(out, b)
		return len(out) <= MaxNegBranches
	}
	for _, a := range f {
		if len(a.AnyOf) == 0 {
			continue
		}
		prod := []branch{{}}
		for _, b := range a.AnyOf {
			nb, r, ok := c.neg(b, depth+1)
			if !ok {
				return nil, 0, false
			}
			residual |= r
			var next []branch
			for _, p := range prod {
				for _, q := range nb {
					next = append(next, branch{ms: append(append([]*jsonschema.Schema{}, p.ms...), q.ms...), ex: mergeExtra(p.ex, q.ex)})
					if len(next) > MaxNegBranches {
						return nil, 0, false
					}
				}
			}
			prod = next
		}
		for _, p := range prod {
			if !add(p) {
				return nil, 0, false
			}
		}
	}
	nonObj, nonStr, nonNum, nonArr := tAll&^tObj, tAll&^tStr, tAll&^(tInt|tNum), tAll&^tArr
	for _, a := range f {
		if a.Always != nil {
			if !*a.Always {
				return []branch{{}}, 0, true // not false: everything
			}
			continue
		}
		ptr := c.ptrOf(a)
		for _, kw := range ownKeywords(a) {
			var bs []branch
			switch kw {
			case "type":
				bs = []branch{{ex: &extra{notTypes: typeMask(a.Types)}}}
			case "enum", "const":
				if kw == "enum" && a.Constant != nil {
					continue // both present: const handled once
				}
				vals := a.Enum
				if a.Constant != nil {
					vals = a.Constant
				}
				bs = []branch{{ex: &extra{notVals: append([]any(nil), vals...)}}}
			case "required":
				for _, r := range a.Required {
					bs = append(bs, branch{ex: &extra{notTypes: nonObj, forbid: []string{r}}})
				}
			case "properties":
				keys := make([]string, 0, len(a.Properties))
				for k := range a.Properties {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				required := map[string]bool{}
				for _, b := range f {
					for _, r := range b.Required {
						required[r] = true
					}
				}
				for _, k := range keys {
					inner, r, ok := c.neg(a.Properties[k], depth+1)
					if subset && required[k] && (!ok || r != 0) {
						// the object without k is covered by "required";
						// k present with an inexpressibly bad value is left out
						if !ok {
							continue
						}
						r = 0
					}
					if !ok {
						residual |= tObj
						continue
					}
					if r != 0 {
						residual |= tObj
					}
					for _, ib := range inner {
						ib := ib
						bs = append(bs, branch{ex: &extra{notTypes: nonObj, require: []string{k}, props: map[string]*branch{k: &ib}}})
					}
				}
			case "pattern":
				bs = []branch{{ex: &extra{notTypes: nonStr, notPats: []patRef{{a.Pattern.String(), ptr}}}}}
			case "minLength", "maxLength":
				if a.MinLength > 1000 || a.MaxLength > 1000 {
					residual |= tStr
					continue
				}
				if kw == "minLength" && a.MinLength <= 0 {
					continue
				}
				src := fmt.Sprintf(`^(?s:.){%d,}$`, a.MinLength)
				if kw == "maxLength" {
					src = fmt.Sprintf(`^(?s:.){0,%d}$`, a.MaxLength)
				}
				bs = []branch{{ex: &extra{notTypes: nonStr, notPats: []patRef{{src, ptr}}}}}
			case "format":
				re, ok := validatorRegex(a.Format)
				if !ok {
					residual |= tStr
					continue
				}
				bs = []branch{{ex: &extra{notTypes: nonStr, notPats: []patRef{{re, ptr}}}}}
			case "minimum":
				bs = []branch{{ex: &extra{notTypes: nonNum, bounds: []numBound{{a.Minimum, true, true}}}}}
			case "exclusiveMinimum":
				bs = []branch{{ex: &extra{notTypes: nonNum, bounds: []numBound{{a.ExclusiveMinimum, true, false}}}}}
			case "maximum":
				bs = []branch{{ex: &extra{notTypes: nonNum, bounds: []numBound{{a.Maximum, false, true}}}}}
			case "exclusiveMaximum":
				bs = []branch{{ex: &extra{notTypes: nonNum, bounds: []numBound{{a.ExclusiveMaximum, false, false}}}}}
			case "minItems":
				if a.MinItems > 0 {
					bs = []branch{{ex: &extra{notTypes: nonArr, maxItems: a.MinItems - 1, hasItems: true}}}
				}
			case "maxItems":
				bs = []branch{{ex: &extra{notTypes: nonArr, minItems: a.MaxItems + 1}}}
			case "items":
				item, ok := a.Items.(*jsonschema.Schema)
				if a.Items2020 != nil {
					item, ok = a.Items2020, len(a.PrefixItems) == 0
				}
				if !ok {
					residual |= tArr
					continue
				}
				inner, r, iok := c.neg(item, depth+1)
				if !iok || r != 0 {
					residual |= tArr
				}
				if iok && len(inner) > 0 {
					bs = []branch{{ex: &extra{notTypes: nonArr, contains: inner}}}
				}
			case "not":
				bs = []branch{{ms: []*jsonschema.Schema{a.Not}}}
			case "anyOf":
				continue // above
			case "multipleOf":
				if !a.MultipleOf.IsInt() || a.MultipleOf.Sign() <= 0 {
					residual |= tInt | tNum
					continue
				}
				bs = []branch{{ex: &extra{notTypes: nonNum, notMults: []*big.Int{new(big.Int).Set(a.MultipleOf.Num())}}}}
			case "additionalProperties", "patternProperties", "propertyNames", "minProperties", "maxProperties",
				"dependencies", "dependentRequired", "dependentSchemas", "unevaluatedProperties":
				residual |= tObj
				continue
			case "prefixItems", "additionalItems", "contains", "uniqueItems", "unevaluatedItems":
				residual |= tArr
				continue
			default:
				return nil, 0, false
			}
			for _, b := range bs {
				if !add(b) {
					return nil, 0, false
				}
			}
		}
	}
	return out, residual, true
}

// flattenAtoms lists a schema and the schemas it includes by $ref and
// allOf.
func (c *conv) flattenAtoms(s *jsonschema.Schema) []*jsonschema.Schema {
	return inPlace([]*jsonschema.Schema{s}, nil)
}

// inPlace lists the roots and the schemas they apply in place through
// $ref, $recursiveRef, $dynamicRef and allOf, and through the links of a
// term (annLink), each once, depth first in document order.
func inPlace(roots []*jsonschema.Schema, links []annLink) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	seen := map[*jsonschema.Schema]bool{}
	var visit func(s *jsonschema.Schema)
	visit = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		out = append(out, s)
		visit(s.Ref)
		visit(s.RecursiveRef)
		visit(s.DynamicRef)
		for _, a := range s.AllOf {
			visit(a)
		}
		for _, l := range links {
			if l.from == s {
				visit(l.to)
			}
		}
	}
	for _, s := range roots {
		visit(s)
	}
	return out
}

// negFor is neg for a context whose values have the given types: the
// negation is usable when its residual lies outside them.
func (c *conv) negFor(s *jsonschema.Schema, types uint8) ([]branch, bool) {
	bs, r, ok := c.neg(s, 0)
	if !ok || r&types != 0 {
		return nil, false
	}
	return bs, true
}

// notExtra returns the synthetic constraints equivalent to `not s` (for
// values of the given types) when the negation is a single branch without
// schemas.
func (c *conv) notExtra(s *jsonschema.Schema, types uint8) (*extra, bool) {
	bs, ok := c.negFor(s, types)
	if !ok {
		return nil, false
	}
	if len(bs) == 0 {
		return &extra{notTypes: tAll}, true // not of an unconstrained schema
	}
	if len(bs) == 1 && len(bs[0].ms) == 0 {
		if bs[0].ex == nil {
			return &extra{}, true
		}
		return bs[0].ex, true
	}
	return nil, false
}

// notGroup rewrites `not` as the disjunction of its negation's branches,
// when that has several branches or schemas.
func (c *conv) notGroup(s *jsonschema.Schema, types uint8) (group, bool) {
	bs, ok := c.negFor(s.Not, types)
	if !ok || (len(bs) == 1 && len(bs[0].ms) == 0) || len(bs) == 0 {
		return group{}, false
	}
	return group{kind: "not", owner: s, ptr: c.ptrOf(s), branches: bs}, true
}

func (c *conv) notHandledAsGroup(s *jsonschema.Schema, types uint8) bool {
	_, ok := c.notGroup(s, types)
	return ok
}

// ifGroup rewrites if/then/else as (if and then) or (not-if and else),
// when if has an exact negation for these types.
func (c *conv) ifGroup(s *jsonschema.Schema, types uint8) (group, bool) {
	nif, ok := c.negFor(s.If, types)
	if !ok {
		return group{}, false
	}
	g := group{kind: "if", owner: s, ptr: c.ptrOf(s)}
	// a passing if contributes its annotations; a failing one (the
	// negation branches) does not
	b1 := branch{ms: []*jsonschema.Schema{s.If}, ann: []*jsonschema.Schema{s.If}}
	if s.Then != nil {
		b1.ms = append(b1.ms, s.Then)
		b1.ann = append(b1.ann, s.Then)
	}
	g.branches = []branch{b1}
	for _, nb := range nif {
		b2 := branch{ms: append([]*jsonschema.Schema{}, nb.ms...), ex: nb.ex}
		if s.Else != nil {
			b2.ms = append(b2.ms, s.Else)
			b2.ann = []*jsonschema.Schema{s.Else}
		}
		g.branches = append(g.branches, b2)
	}
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
	g := group{kind: "dependencies", owner: s, ptr: c.ptrOf(s)}
	for mask := 0; mask < 1<<len(keys); mask++ {
		b := branch{ex: &extra{}}
		if mask != 0 {
			// the validator applies dependencies to objects only: a value
			// of another type takes the branch without dependent schemas
			// (nor their annotations)
			b.ex.notTypes = tAll &^ tObj
		}
		for i, k := range keys {
			if mask&(1<<i) != 0 {
				b.ex.require = append(b.ex.require, k)
				b.ex.require = append(b.ex.require, deps[k].req...)
				b.ms = append(b.ms, deps[k].sch...)
				b.ann = append(b.ann, deps[k].sch...)
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
	proof  term // what values are judged by (proofTerm)
}

func (c *conv) summarize(t term) summary {
	f := c.flatten(t)
	n := c.merge(f.atoms, t)
	s := summary{types: n.types, n: n, groups: len(f.groups), proof: c.proofTerm(t)}
	for _, a := range f.atoms {
		if a.Enum != nil || a.Constant != nil {
			vals := a.Enum
			if a.Constant != nil {
				vals = a.Constant
			}
			// a's values satisfy a's enum: judged without it, as in
			// emitEnum (the validator's enum check is a scan of the list)
			_, rest := enumSelf(a, s.proof)
			for _, v := range vals {
				if c.valueOK(v, rest) {
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
	return c.disjointSums(c.summarize(a), c.summarize(b))
}

// disjointSums is disjointPair on the terms' summaries.
func (c *conv) disjointSums(sa, sb summary) bool {
	if sa.enum != nil {
		for _, v := range sa.enum {
			if c.valueOK(v, sb.proof) {
				return false
			}
		}
		return true
	}
	if sb.enum != nil {
		for _, v := range sb.enum {
			if c.valueOK(v, sa.proof) {
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
	if pb, ok := n.ex.props[p]; ok {
		t.ms = append(t.ms, pb.ms...)
		t.ex = pb.ex
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
	d := c.anyString()
	for _, p := range append(la, lb...) {
		rd, err := c.patternDFA(p.src, nil)
		if err != nil {
			return false
		}
		if d, err = c.intersect(d, rd); err != nil {
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
		ld, err := c.lengthDFA(lo, hi)
		if err != nil {
			return false
		}
		if d, err = c.intersect(d, ld); err != nil {
			return false
		}
	}
	return d.isEmpty()
}
