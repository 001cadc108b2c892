package jsonschema2gbnf

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// extra holds constraints that come from rewriting (not, if/then/else,
// oneOf, dependencies) rather than from a schema object. Each field
// constrains only values of the type it is about: forbid/require/props
// only objects, notPats only strings, bounds only numbers.
type extra struct {
	forbid   []string // properties that must be absent
	require  []string // properties that must be present
	notTypes uint8    // types excluded
	notVals  []any    // values excluded (plain form)
	notPats  []patRef // patterns strings must not match
	bounds   []numBound
	notMults []*big.Int         // integers that must not divide the value
	props    map[string]*branch // constraints on a property's value

	minItems, maxItems int      // arrays: bounds (maxItems applies when hasItems)
	contains           []branch // arrays: at least one item satisfies one of these
	hasItems           bool     // maxItems is set
}

// typesOut returns the types the constraints exclude outright.
func (e *extra) typesOut() uint8 {
	if e == nil {
		return 0
	}
	return e.notTypes
}

type patRef struct {
	src string
	ptr string
}

// numBound is minimum/maximum (upper), exclusive or not.
type numBound struct {
	r         *big.Rat
	upper, ex bool
}

func (e *extra) clone() *extra {
	if e == nil {
		return &extra{}
	}
	n := *e
	n.forbid = append([]string(nil), e.forbid...)
	n.require = append([]string(nil), e.require...)
	n.notVals = append([]any(nil), e.notVals...)
	n.notPats = append([]patRef(nil), e.notPats...)
	n.bounds = append([]numBound(nil), e.bounds...)
	n.notMults = append([]*big.Int(nil), e.notMults...)
	n.contains = append([]branch(nil), e.contains...)
	if e.props != nil {
		n.props = map[string]*branch{}
		for k, v := range e.props {
			n.props[k] = v
		}
	}
	return &n
}

func (e *extra) key() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	f := dedup(append([]string(nil), e.forbid...))
	sort.Strings(f)
	r := dedup(append([]string(nil), e.require...))
	sort.Strings(r)
	fmt.Fprintf(&b, "F%q R%q T%d", f, r, e.notTypes)
	var vs []string
	for _, v := range e.notVals {
		vs = append(vs, canonicalJSON(v))
	}
	sort.Strings(vs)
	fmt.Fprintf(&b, " V%q", dedup(vs))
	var ps []string
	for _, p := range e.notPats {
		ps = append(ps, p.src)
	}
	sort.Strings(ps)
	fmt.Fprintf(&b, " P%q", dedup(ps))
	var bs []string
	for _, x := range e.bounds {
		bs = append(bs, fmt.Sprintf("%s/%v/%v", x.r.RatString(), x.upper, x.ex))
	}
	sort.Strings(bs)
	var ms []string
	for _, m := range e.notMults {
		ms = append(ms, m.String())
	}
	sort.Strings(ms)
	fmt.Fprintf(&b, " B%q M%q I%d/%d/%v", bs, ms, e.minItems, e.maxItems, e.hasItems)
	for _, cb := range e.contains {
		var ids []string
		for _, s := range cb.ms {
			ids = append(ids, fmt.Sprintf("%p", s))
		}
		sort.Strings(ids)
		fmt.Fprintf(&b, " C{%s|%s}", strings.Join(ids, ","), cb.ex.key())
	}
	var ks []string
	for k := range e.props {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		pb := e.props[k]
		var ids []string
		for _, s := range pb.ms {
			ids = append(ids, fmt.Sprintf("%p", s))
		}
		sort.Strings(ids)
		fmt.Fprintf(&b, " E%q{%s|%s}", k, strings.Join(ids, ","), pb.ex.key())
	}
	return b.String()
}

func (e *extra) isEmpty() bool {
	return e == nil || (len(e.forbid) == 0 && len(e.require) == 0 && e.notTypes == 0 &&
		len(e.notVals) == 0 && len(e.notPats) == 0 && len(e.bounds) == 0 && len(e.notMults) == 0 && len(e.props) == 0 &&
		e.minItems == 0 && !e.hasItems && len(e.contains) == 0)
}

func mergeExtra(a, b *extra) *extra {
	n := a.clone()
	if b == nil {
		return n
	}
	n.forbid = append(n.forbid, b.forbid...)
	n.require = append(n.require, b.require...)
	n.notTypes |= b.notTypes
	n.notVals = append(n.notVals, b.notVals...)
	n.notPats = append(n.notPats, b.notPats...)
	n.bounds = append(n.bounds, b.bounds...)
	n.notMults = append(n.notMults, b.notMults...)
	if b.minItems > n.minItems {
		n.minItems = b.minItems
	}
	if b.hasItems && (!n.hasItems || b.maxItems < n.maxItems) {
		n.maxItems, n.hasItems = b.maxItems, true
	}
	n.contains = append(n.contains, b.contains...)
	for k, v := range b.props {
		if n.props == nil {
			n.props = map[string]*branch{}
		}
		n.props[k] = mergeBranch(n.props[k], v)
	}
	return n
}

func mergeBranch(a, b *branch) *branch {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return &branch{ms: append(append([]*jsonschema.Schema{}, a.ms...), b.ms...), ex: mergeExtra(a.ex, b.ex)}
}

// allows checks the synthetic constraints on a concrete (plain) value.
func (c *conv) allows(e *extra, v any) bool {
	if e == nil {
		return true
	}
	if e.notTypes&valueType(v) != 0 {
		return false
	}
	k := canonicalJSON(v)
	for _, nv := range e.notVals {
		if canonicalJSON(nv) == k {
			return false
		}
	}
	switch x := v.(type) {
	case string:
		for _, p := range e.notPats {
			re, err := c.regexp(p.src)
			if err == nil && re.MatchString(x) {
				return false
			}
		}
	case []any:
		if len(x) < e.minItems || (e.hasItems && len(x) > e.maxItems) {
			return false
		}
		if len(e.contains) > 0 {
			hit := false
			for _, item := range x {
				for _, cb := range e.contains {
					if c.valueOK(item, term{ms: cb.ms, ex: cb.ex}) {
						hit = true
					}
				}
			}
			if !hit {
				return false
			}
		}
	case map[string]any:
		for _, f := range e.forbid {
			if _, has := x[f]; has {
				return false
			}
		}
		for _, r := range e.require {
			if _, has := x[r]; !has {
				return false
			}
		}
		for p, pb := range e.props {
			if pv, has := x[p]; has && !c.valueOK(pv, term{ms: pb.ms, ex: pb.ex}) {
				return false
			}
		}
	default:
		if s, ok := asNumber(v); ok {
			r, ok := new(big.Rat).SetString(s)
			if !ok {
				return false
			}
			for _, m := range e.notMults {
				q := new(big.Rat).Quo(r, new(big.Rat).SetInt(m))
				if q.IsInt() {
					return false
				}
			}
			for _, b := range e.bounds {
				cmp := r.Cmp(b.r)
				if b.upper && (cmp > 0 || (cmp == 0 && b.ex)) {
					return false
				}
				if !b.upper && (cmp < 0 || (cmp == 0 && b.ex)) {
					return false
				}
			}
		}
	}
	return true
}
