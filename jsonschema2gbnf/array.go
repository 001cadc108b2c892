package jsonschema2gbnf

import (
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Arrays: positional items (prefixItems, or items as an array in drafts
// before 2020-12) then the remaining items, with minItems/maxItems as
// counted repetition. contains is supported without a prefix as "any
// items, then one that satisfies contains as well, then any items"
// (minContains times); uniqueItems only where it is implied.

type arrPart struct {
	prefix []*jsonschema.Schema
	rest   any // nil (any), false, *jsonschema.Schema
}

func arrPartOf(a *jsonschema.Schema) arrPart {
	var p arrPart
	switch it := a.Items.(type) {
	case []*jsonschema.Schema:
		p.prefix = it
		switch ad := a.AdditionalItems.(type) {
		case bool:
			if !ad {
				p.rest = false
			}
		case *jsonschema.Schema:
			p.rest = ad
		}
	case *jsonschema.Schema:
		p.rest = it
	}
	if len(a.PrefixItems) > 0 {
		p.prefix = a.PrefixItems
	}
	if a.Items2020 != nil {
		p.rest = a.Items2020
	}
	return p
}

func (c *conv) emitArray(n *node) string {
	ws := c.ws()
	for _, us := range n.unevI {
		// the items contains matches are evaluated (2020-12): which ones
		// depends on the item values
		for a := range us.scope {
			if a.Contains != nil && a.ContainsEval {
				if !c.unsupported(c.ptrOf(us.u), "unevaluatedItems", "together with contains in its scope (the items contains matches are evaluated)") {
					return ""
				}
				break
			}
		}
	}
	var parts []arrPart
	minI, maxI := 0, -1
	var contains []*jsonschema.Schema
	minC := 1 // minContains of the contains keyword (1 when absent)
	maxC := -1
	unique := false
	uniquePtr := ""
	for _, a := range n.atoms {
		parts = append(parts, arrPartOf(a))
		if a.MinItems > minI {
			minI = a.MinItems
		}
		if a.MaxItems >= 0 && (maxI < 0 || a.MaxItems < maxI) {
			maxI = a.MaxItems
		}
		if a.Contains != nil {
			contains = append(contains, a.Contains)
			if v := c.bound(a, "minContains", a.MinContains); len(contains) == 1 || v > minC {
				minC = v
			}
			if a.MaxContains >= 0 && (maxC < 0 || a.MaxContains < maxC) {
				maxC = a.MaxContains
			}
		}
		if a.UniqueItems {
			unique = true
			uniquePtr = c.ptrOf(a)
		}
	}
	if n.ex.minItems > minI {
		minI = n.ex.minItems
	}
	if n.ex.hasItems && (maxI < 0 || n.ex.maxItems < maxI) {
		maxI = n.ex.maxItems
	}
	P := 0
	for _, p := range parts {
		if len(p.prefix) > P {
			P = len(p.prefix)
		}
	}
	if maxI >= 0 && P > maxI {
		P = maxI
	}
	// position terms (i ≥ P: the items past every prefix)
	posTerm := func(i int) (term, bool) {
		var t term
		for _, p := range parts {
			if i < len(p.prefix) {
				t.ms = append(t.ms, p.prefix[i])
				continue
			}
			switch r := p.rest.(type) {
			case bool:
				return t, false
			case *jsonschema.Schema:
				t.ms = append(t.ms, r)
			}
		}
		ok := addUnevaluated(&t, n.unevI, func(us unevScope) bool { return us.evaluatesItem(i) }, true)
		return t, ok
	}
	itemPtr := joinPointer(n.ptr, "items")
	exprOf := func(t term, ok bool, ptr string) string {
		if !ok {
			return ""
		}
		if len(t.ms) == 0 {
			return c.prim(ruleValue)
		}
		return c.emit(t, ptr)
	}
	var items []string
	for i := 0; i < P; i++ {
		t, ok := posTerm(i)
		x := exprOf(t, ok, joinPointer(itemPtr, strconv.Itoa(i)))
		if c.fatal != nil {
			return ""
		}
		if x == "" {
			// no value fits position i: at most i items
			if maxI < 0 || maxI > i {
				maxI = i
			}
			P = i
			break
		}
		items = append(items, x)
	}
	rt, rok := posTerm(1 << 30)
	rest := exprOf(rt, rok, itemPtr)
	if c.fatal != nil {
		return ""
	}
	if rest == "" && (maxI < 0 || maxI > P) {
		maxI = P
	}
	if maxI >= 0 && minI > maxI {
		return ""
	}
	if unique && !(maxI >= 0 && maxI <= 1) {
		if !c.unsupported(uniquePtr, "uniqueItems", "the grammar cannot compare items") {
			return ""
		}
	}
	// contains with minContains 0 (and no maxContains) holds for every
	// array
	if len(contains) == 1 && len(n.ex.contains) == 0 && minC == 0 && maxC < 0 {
		contains = nil
	}
	if len(contains) > 0 || len(n.ex.contains) > 0 {
		var hits []term
		switch {
		case len(contains) == 1 && len(n.ex.contains) == 0:
			hits = []term{{ms: append(append([]*jsonschema.Schema{}, rt.ms...), contains[0]), ex: rt.ex}}
		case len(contains) == 0:
			if minC < 1 {
				minC = 1
			}
			for _, b := range n.ex.contains {
				hits = append(hits, term{ms: append(append([]*jsonschema.Schema{}, rt.ms...), b.ms...), ex: mergeExtra(rt.ex, b.ex)})
			}
		}
		return c.containsArray(n, items, rest, hits, minI, maxI, minC, maxC)
	}
	if maxI == 0 {
		return seq(`"["`, ws, `"]"`)
	}
	if P == 0 && minI == 0 && maxI < 0 && rest == ruleValue {
		return c.prim(ruleArray) // unconstrained: the shared rule
	}
	comma := func(x string) string { return seq(`","`, ws, x) }
	var content string
	if P == 0 {
		lo := max(0, minI-1)
		content = seq(rest, rep(paren(comma(rest)), lo, decr(maxI)))
	} else {
		// tail(k): items k.. after item k-1
		tail := ""
		{
			lo := max(0, minI-P)
			hi := -1
			if maxI >= 0 {
				hi = maxI - P
			}
			if rest != "" && hi != 0 {
				tail = rep(paren(comma(rest)), lo, hi)
			}
		}
		for k := P - 1; k >= 1; k-- {
			x := seq(comma(items[k]), tail)
			if k >= minI {
				tail = opt(x)
			} else {
				tail = x
			}
		}
		content = seq(items[0], tail)
	}
	if minI == 0 {
		content = opt(content)
	}
	return seq(`"["`, ws, content, ws, `"]"`)
}

// containsArray writes arrays without positional items where at least
// minContains items also satisfy one of the hit terms (the item schema
// and a contains schema).
func (c *conv) containsArray(n *node, items []string, rest string, hits []term, minI, maxI, minC, maxC int) string {
	ws := c.ws()
	ptr := n.ptr
	if len(items) > 0 || maxC >= 0 || maxI >= 0 || len(hits) == 0 {
		if !c.unsupported(ptr, "contains", "contains is supported without prefixItems, maxContains, maxItems, or a second contains") {
			return ""
		}
		return c.emitArrayNoContains(rest, minI, maxI)
	}
	if rest == "" {
		return ""
	}
	if minC == 0 {
		return c.emitArrayNoContains(rest, minI, maxI)
	}
	var alts []string
	for _, h := range hits {
		if x := c.emit(h, joinPointer(ptr, "contains")); x != "" {
			alts = append(alts, x)
		}
		if c.fatal != nil {
			return ""
		}
	}
	hit := alt(alts...)
	if hit == "" {
		return ""
	}
	if minI > minC {
		if !c.unsupported(ptr, "minItems", "minItems larger than minContains together with contains") {
			return ""
		}
	}
	comma := func(x string) string { return seq(`","`, ws, x) }
	// (rest ",")* hit ( "," (rest ",")* hit ){minC-1} ("," rest)*
	lead := rep(paren(seq(rest, `","`, ws)), 0, -1)
	parts := []string{lead, hit}
	if minC > 1 {
		parts = append(parts, rep(paren(seq(`","`, ws, lead, hit)), minC-1, minC-1))
	}
	parts = append(parts, rep(paren(comma(rest)), 0, -1))
	return seq(`"["`, ws, seq(parts...), ws, `"]"`)
}

func (c *conv) emitArrayNoContains(rest string, minI, maxI int) string {
	ws := c.ws()
	if rest == "" || maxI == 0 {
		if minI > 0 {
			return ""
		}
		return seq(`"["`, ws, `"]"`)
	}
	content := seq(rest, rep(paren(seq(`","`, ws, rest)), max(0, minI-1), decr(maxI)))
	if minI == 0 {
		content = opt(content)
	}
	return seq(`"["`, ws, content, ws, `"]"`)
}
