package jsonschema2gbnf

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// node is the merged form of a conjunction of schemas without
// disjunctions: the keyword values that apply to one JSON value.
type node struct {
	ptr   string
	atoms []*jsonschema.Schema
	ex    *extra
	types uint8

	minLen, maxLen int // maxLen < 0: none
	pats           []patRef
	fmts           []patRef // format names (src is the name)

	lo, hi     *big.Rat
	loEx, hiEx bool
	mults      []*big.Rat
	multPtr    string

	unevP, unevI []unevScope // unevaluatedProperties/Items and their scopes
}

// addUnevaluated adds to t the unevaluated keywords (of scopes) whose
// scope does not evaluate the property or item at hand; false when one
// of them is the false schema (the property or item cannot be there).
func addUnevaluated(t *term, scopes []unevScope, evaluated func(unevScope) bool, items bool) bool {
	for _, us := range scopes {
		if evaluated(us) {
			continue
		}
		u := us.u.UnevaluatedProperties
		if items {
			u = us.u.UnevaluatedItems
		}
		if u.Always != nil && !*u.Always {
			return false
		}
		t.ms = append(t.ms, u)
	}
	return true
}

func (c *conv) merge(atoms []*jsonschema.Schema, t term) *node {
	n := &node{atoms: atoms, types: tAll, minLen: 0, maxLen: -1}
	n.ex = t.ex.clone()
	n.unevP = unevScopes(atoms, t.ann, false)
	n.unevI = unevScopes(atoms, t.ann, true)
	for _, a := range atoms {
		if len(ownKeywords(a)) > 0 && n.ptr == "" {
			n.ptr = c.ptrOf(a)
		}
	}
	if n.ptr == "" && len(atoms) > 0 {
		n.ptr = c.ptrOf(atoms[0])
	}
	atomTypes := tAll &^ n.ex.notTypes
	for _, a := range atoms {
		if len(a.Types) > 0 {
			atomTypes &= typeMask(a.Types)
		}
	}
	for _, a := range atoms {
		ptr := c.ptrOf(a)
		if len(a.Types) > 0 {
			n.types &= typeMask(a.Types)
		}
		if v := c.bound(a, "minLength", a.MinLength); v > n.minLen {
			n.minLen = v
		}
		if v := c.bound(a, "maxLength", a.MaxLength); v >= 0 && (n.maxLen < 0 || v < n.maxLen) {
			n.maxLen = v
		}
		if a.Pattern != nil {
			n.pats = append(n.pats, patRef{a.Pattern.String(), ptr})
		}
		if a.Format != "" {
			if assertedFormat(a.Format) {
				n.fmts = append(n.fmts, patRef{a.Format, ptr})
			} else {
				c.note(ptr, "format", "format "+a.Format+" is not one the validator asserts; treated as an annotation")
			}
		}
		if a.Minimum != nil {
			n.setLo(a.Minimum, false)
		}
		if a.ExclusiveMinimum != nil {
			n.setLo(a.ExclusiveMinimum, true)
		}
		if a.Maximum != nil {
			n.setHi(a.Maximum, false)
		}
		if a.ExclusiveMaximum != nil {
			n.setHi(a.ExclusiveMaximum, true)
		}
		if a.MultipleOf != nil {
			n.mults = append(n.mults, a.MultipleOf)
			n.multPtr = ptr
		}
		if a.Not != nil && !c.isDone(t, a, "not") && !c.notHandledAsGroup(a, atomTypes) {
			e, ok := c.notExtra(a.Not, atomTypes)
			if ok {
				n.ex = mergeExtra(n.ex, e)
			} else if !c.unsupported(ptr, "not", "its negation has no exact grammar") {
				n.types = 0
			}
		}
	}
	for _, a := range n.atoms {
		ptr := c.ptrOf(a)
		if a.If != nil && !c.isDone(t, a, "if") {
			if !c.unsupported(ptr, "if", "the negation of if has no exact grammar") {
				n.types = 0
			}
		}
		if (len(a.Dependencies) > 0 || len(a.DependentRequired) > 0 || len(a.DependentSchemas) > 0) && !c.isDone(t, a, "dependencies") {
			kw := "dependencies"
			if len(a.DependentRequired) > 0 {
				kw = "dependentRequired"
			} else if len(a.DependentSchemas) > 0 {
				kw = "dependentSchemas"
			}
			if !c.unsupported(ptr, kw, fmt.Sprintf("more than %d trigger properties", MaxDependencyKeys)) {
				n.types = 0
			}
		}
	}
	for _, b := range n.ex.bounds {
		if b.upper {
			n.setHi(b.r, b.ex)
		} else {
			n.setLo(b.r, b.ex)
		}
	}
	n.types &^= n.ex.notTypes
	// an integer multipleOf admits only integral values, which are
	// integers (6000.0 too, in every draft): where the integers are
	// excluded ("not": {"type": "integer"}, or a oneOf branch beside
	// "type": "integer"), no number is left
	if n.types&tInt == 0 {
		for _, m := range n.mults {
			if m.Sign() > 0 && m.IsInt() {
				n.types &^= tNum
				break
			}
		}
	}
	// "not" on values: a type whose every value is excluded disappears
	for _, v := range n.ex.notVals {
		switch v.(type) {
		case nil:
			n.types &^= tNull
		case map[string]any, []any, *ordObj:
			// excluding one object or array value has no grammar
			if n.types&valueType(v) != 0 {
				if !c.unsupported(n.ptr, "not", "excluding one object or array value") {
					n.types = 0
				}
			}
		}
	}
	if n.ex.hasBool(true) && n.ex.hasBool(false) {
		n.types &^= tBool
	}
	return n
}

func (e *extra) hasBool(b bool) bool {
	for _, v := range e.notVals {
		if x, ok := v.(bool); ok && x == b {
			return true
		}
	}
	return false
}

func (n *node) setLo(r *big.Rat, ex bool) {
	if n.lo == nil {
		n.lo, n.loEx = r, ex
		return
	}
	switch c := r.Cmp(n.lo); {
	case c > 0:
		n.lo, n.loEx = r, ex
	case c == 0 && ex:
		n.loEx = true
	}
}

func (n *node) setHi(r *big.Rat, ex bool) {
	if n.hi == nil {
		n.hi, n.hiEx = r, ex
		return
	}
	switch c := r.Cmp(n.hi); {
	case c < 0:
		n.hi, n.hiEx = r, ex
	case c == 0 && ex:
		n.hiEx = true
	}
}

func (c *conv) emitNode(n *node) string {
	var alts []string
	if n.types&tNull != 0 {
		alts = append(alts, c.prim(ruleNull))
	}
	if n.types&tBool != 0 {
		switch {
		case n.ex.hasBool(true):
			alts = append(alts, `"false"`)
		case n.ex.hasBool(false):
			alts = append(alts, `"true"`)
		default:
			alts = append(alts, c.prim(ruleBoolean))
		}
	}
	if n.types&(tInt|tNum) != 0 {
		if x := c.emitNumber(n); x != "" {
			alts = append(alts, x)
		}
	}
	if n.types&tStr != 0 {
		if x := c.emitString(n); x != "" {
			alts = append(alts, x)
		}
	}
	if n.types&tArr != 0 {
		if x := c.emitArray(n); x != "" {
			alts = append(alts, x)
		}
	}
	if n.types&tObj != 0 {
		if x := c.emitObject(n); x != "" {
			alts = append(alts, x)
		}
	}
	if n.types == tAll && len(alts) == 6 && n.isUnconstrained() {
		return c.prim(ruleValue)
	}
	return alt(alts...)
}

// isUnconstrained reports a node that accepts every JSON value.
func (n *node) isUnconstrained() bool {
	for _, a := range n.atoms {
		if len(ownKeywords(a)) > 0 {
			return false
		}
	}
	return n.ex.isEmpty()
}

// numbers

func (c *conv) emitNumber(n *node) string {
	// multipleOf: an integer multipleOf (or any multipleOf on integers)
	// is a remainder automaton; 10^-d on numbers limits the fraction; other
	// fractional values are not expressible.
	var k *big.Int
	decimals := -1 // multipleOf 10^-d: at most d significant fraction digits
	for _, m := range n.mults {
		if m.Sign() <= 0 {
			continue
		}
		if m.IsInt() {
			if k == nil {
				k = new(big.Int).Set(m.Num())
			} else {
				k = lcm(k, m.Num())
			}
			continue
		}
		if d, ok := pow10Inverse(m); ok && n.types&tNum != 0 && d <= MaxDecimalPlaces {
			if decimals < 0 || d < decimals {
				decimals = d
			}
			continue
		}
		if n.types&tNum == 0 {
			// an integer x is a multiple of p/q iff p divides x
			p := new(big.Int).Set(m.Num())
			if k == nil {
				k = p
			} else {
				k = lcm(k, p)
			}
			continue
		}
		if !c.unsupported(n.multPtr, "multipleOf", "a fractional multipleOf ("+m.RatString()+") is not expressible") {
			return ""
		}
	}
	intOnly := k != nil // an integer multipleOf (1 included) admits only integers
	if k != nil && k.Cmp(big.NewInt(1)) == 0 {
		k = nil
	}
	notMults := n.ex.notMults
	if k == nil && len(notMults) > 0 {
		k = big.NewInt(1)
	}
	excluded := n.excludedNumbers()
	var alts []string
	if n.types&tInt != 0 {
		// integers (the only numbers when an integer multipleOf applies;
		// with the integers excluded there are none: see merge)
		lo, hi := intBounds(n.lo, n.hi, n.loEx, n.hiEx)
		var x string
		if k == nil {
			x = intRangesExpr(lo, hi, excluded)
		} else {
			x = c.intMultiples(n, k, notMults, lo, hi, excluded)
		}
		if x != "" && intOnly && n.types&tNum != 0 {
			// type number with an integer multipleOf: 6000.0 is valid too
			x = seq(paren(x), `("." `+fracZeros+`)?`)
		}
		if x != "" {
			alts = append(alts, x)
		}
	}
	if n.types&tNum != 0 && !intOnly {
		// with integers already written, the rest are the non-integers;
		// written alone (type number) the grammar is the plain one, unless
		// "not multipleOf" took some integers out
		sh := numShape{nonInt: n.types&tInt == 0 || len(notMults) > 0, sig: decimals}
		if !sh.nonInt {
			alts = nil // the number grammar includes the integers
		}
		for _, r := range splitRange(n.lo, n.hi, n.loEx, n.hiEx, excluded) {
			x, err := numRangeExpr(r.lo, r.hi, r.loEx, r.hiEx, sh)
			if err != nil {
				c.fail(&LimitError{Pointer: n.ptr, Limit: "MaxBoundDigits", Max: MaxBoundDigits})
				return ""
			}
			if x != "" {
				alts = append(alts, x)
			}
		}
	}
	return alt(alts...)
}

// excludedNumbers returns the numbers "not" excluded, sorted.
func (n *node) excludedNumbers() []*big.Rat {
	var out []*big.Rat
	for _, v := range n.ex.notVals {
		if s, ok := asNumber(v); ok {
			if r, ok := new(big.Rat).SetString(s); ok {
				out = append(out, r)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cmp(out[j]) < 0 })
	return out
}

type ratRange struct {
	lo, hi     *big.Rat
	loEx, hiEx bool
}

func splitRange(lo, hi *big.Rat, loEx, hiEx bool, pts []*big.Rat) []ratRange {
	cur := ratRange{lo, hi, loEx, hiEx}
	var out []ratRange
	for _, p := range pts {
		if (cur.lo != nil && p.Cmp(cur.lo) < 0) || (cur.hi != nil && p.Cmp(cur.hi) > 0) {
			continue
		}
		out = append(out, ratRange{cur.lo, p, cur.loEx, true})
		cur = ratRange{p, cur.hi, true, cur.hiEx}
	}
	return append(out, cur)
}

func intRangesExpr(lo, hi *big.Int, excluded []*big.Rat) string {
	if len(excluded) == 0 {
		return intRangeExpr(lo, hi)
	}
	var alts []string
	cur := lo
	for _, p := range excluded {
		if !p.IsInt() {
			continue
		}
		v := p.Num()
		if (cur != nil && v.Cmp(cur) < 0) || (hi != nil && v.Cmp(hi) > 0) {
			continue
		}
		if x := intRangeExpr(cur, new(big.Int).Sub(v, big.NewInt(1))); x != "" {
			alts = append(alts, x)
		}
		cur = new(big.Int).Add(v, big.NewInt(1))
	}
	if x := intRangeExpr(cur, hi); x != "" {
		alts = append(alts, x)
	}
	return alt(alts...)
}

func lcm(a, b *big.Int) *big.Int {
	g := new(big.Int).GCD(nil, nil, a, b)
	out := new(big.Int).Div(new(big.Int).Mul(a, b), g)
	return out
}

// pow10Inverse reports m == 10^-d.
func pow10Inverse(m *big.Rat) (int, bool) {
	if m.Num().Cmp(big.NewInt(1)) != 0 {
		return 0, false
	}
	d := new(big.Int).Set(m.Denom())
	ten := big.NewInt(10)
	n := 0
	for d.Cmp(big.NewInt(1)) > 0 {
		q, r := new(big.Int).QuoRem(d, ten, new(big.Int))
		if r.Sign() != 0 {
			return 0, false
		}
		d = q
		n++
	}
	return n, true
}

// MaxEnumeratedMultiples bounds the multiples of a bounded range written
// out one by one.
const MaxEnumeratedMultiples = 256

func (c *conv) intMultiples(n *node, k *big.Int, notMults []*big.Int, lo, hi *big.Int, excluded []*big.Rat) string {
	valid := func(v *big.Int) bool {
		if new(big.Int).Mod(v, k).Sign() != 0 {
			return false
		}
		for _, m := range notMults {
			if new(big.Int).Mod(v, m).Sign() == 0 {
				return false
			}
		}
		for _, p := range excluded {
			if p.IsInt() && p.Num().Cmp(v) == 0 {
				return false
			}
		}
		return true
	}
	if lo != nil && hi != nil {
		if lo.Cmp(hi) > 0 {
			return ""
		}
		// first multiple ≥ lo
		first := new(big.Int).Mod(lo, k)
		if first.Sign() != 0 {
			first.Sub(k, first)
		}
		first.Add(first, lo)
		count := new(big.Int).Sub(hi, first)
		if count.Sign() < 0 {
			return ""
		}
		count.Div(count, k)
		if count.Cmp(big.NewInt(MaxEnumeratedMultiples)) < 0 {
			var alts []string
			for v := first; v.Cmp(hi) <= 0; v = new(big.Int).Add(v, k) {
				if valid(v) {
					alts = append(alts, `"`+v.String()+`"`)
					if v.Sign() == 0 {
						alts = append(alts, `"-0"`) // 0 too
					}
				}
			}
			return alt(alts...)
		}
	}
	fail := func() string {
		if !c.unsupported(n.multPtr, "multipleOf", "multipleOf "+k.String()+" with these bounds is not expressible") {
			return ""
		}
		return intRangeExpr(lo, hi)
	}
	L := new(big.Int).Set(k)
	for _, m := range notMults {
		L = lcm(L, m)
	}
	if len(excluded) > 0 || !L.IsInt64() || L.Int64() > MaxMultipleOf {
		return fail()
	}
	ll := int(L.Int64())
	accept := make([]bool, ll)
	m0 := -1 // smallest positive valid value
	for r := 0; r < ll; r++ {
		accept[r] = valid(big.NewInt(int64(r)))
		if r > 0 && accept[r] && m0 < 0 {
			m0 = r
		}
	}
	if m0 < 0 && accept[0] {
		m0 = ll
	}
	if m0 < 0 {
		// no positive value; only 0 if valid
		if accept[0] && (lo == nil || lo.Sign() <= 0) && (hi == nil || hi.Sign() >= 0) {
			return `("0" | "-0")`
		}
		return ""
	}
	pos := c.modAccept(ll, accept) // positive valid integers
	zero := ""
	if accept[0] {
		zero = `"0" | "-0"`
	}
	bound := big.NewInt(int64(m0))
	negBound := new(big.Int).Neg(bound)
	var x string
	switch {
	case lo == nil && hi == nil:
		x = alt(zero, seq(`"-"?`, pos))
	case hi == nil && lo.Cmp(negBound) > 0 && lo.Sign() <= 0:
		x = alt(zero, pos)
	case hi == nil && lo.Sign() > 0 && lo.Cmp(bound) <= 0:
		x = pos
	case lo == nil && hi.Sign() >= 0 && hi.Cmp(bound) < 0:
		x = alt(zero, seq(`"-"`, pos))
	case lo == nil && hi.Sign() < 0 && hi.Cmp(negBound) >= 0:
		x = seq(`"-"`, pos)
	default:
		return fail()
	}
	return x
}

// bound returns a count keyword (minLength, maxItems, ...) of a schema,
// checked against the document: santhosh-tekuri converts counts through
// float64 to int, so a huge value can come back wrapped. A maximum above
// MaxRepeatBound is treated as no maximum (documented: no generation
// reaches a million characters or items); a minimum above it is a
// LimitError.
func (c *conv) bound(a *jsonschema.Schema, kw string, v int) int {
	if v == -1 {
		return v // absent (or ignored: a $ref sibling before 2019-09)
	}
	raw, ok := c.l.rawAt(a)
	if ok {
		if _, present := raw.vals[kw]; !present {
			return v // a default (minContains is 1)
		}
	}
	if v >= 0 && v <= MaxRepeatBound {
		return v
	}
	if kw[:3] == "max" {
		c.note(c.ptrOf(a), kw, fmt.Sprintf("a maximum above %d is written as no maximum", MaxRepeatBound))
		return -1
	}
	c.fail(&LimitError{Pointer: joinPointer(c.ptrOf(a), kw), Limit: "MaxRepeatBound", Max: MaxRepeatBound})
	return 0
}
