package jsonschema2gbnf

import (
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// unevaluatedProperties and unevaluatedItems apply to the properties and
// items that their own schema object has not evaluated (JSON Schema
// 2020-12 §11). What that object evaluated is what it and the subschemas
// it applies in place evaluated, for the instance at hand: its own
// properties/patternProperties/additionalProperties (prefixItems/items/
// contains), the schemas it reaches through $ref, $dynamicRef and allOf,
// and the branches of its anyOf/oneOf, if/then/else and dependentSchemas
// that pass. Never its siblings in a parent's allOf (cousins), nor what
// a `not` evaluated (a passing not means a failing subschema, which
// produces no annotations), nor a dependentSchemas entry whose trigger
// property is absent.
//
// In a term, each disjunction is resolved to one branch; the branch's
// in-place schemas are linked to the disjunction's owner (term.ann). The
// scope of an unevaluated keyword is then the set of atoms reachable
// from its schema over the static links and the term's links.
//
// For anyOf the branch an alternative chose is one of those that pass;
// others may pass too and evaluate more, so the grammar may ask an
// unevaluated keyword of a property another passing branch evaluated: a
// subset of the valid documents (sound), see expandGroup.

// unevScope is one unevaluated keyword and the atoms whose annotations
// reach its schema.
type unevScope struct {
	u     *jsonschema.Schema
	scope map[*jsonschema.Schema]bool
}

func hasUnevaluated(atoms []*jsonschema.Schema) bool {
	for _, a := range atoms {
		if a.UnevaluatedProperties != nil || a.UnevaluatedItems != nil {
			return true
		}
	}
	return false
}

// unevScopes returns the scopes of the unevaluatedProperties (items:
// false) or unevaluatedItems (items: true) keywords among atoms.
func unevScopes(atoms []*jsonschema.Schema, links []annLink, items bool) []unevScope {
	var out []unevScope
	for _, a := range atoms {
		if (!items && a.UnevaluatedProperties != nil) || (items && a.UnevaluatedItems != nil) {
			out = append(out, unevScope{a, inPlaceClosure(a, links)})
		}
	}
	return out
}

// inPlaceClosure is s and every schema it applies in place, over the
// static links and the term's links.
func inPlaceClosure(s *jsonschema.Schema, links []annLink) map[*jsonschema.Schema]bool {
	set := map[*jsonschema.Schema]bool{}
	for _, a := range inPlace([]*jsonschema.Schema{s}, links) {
		set[a] = true
	}
	return set
}

// evaluatesAll reports whether some schema of the scope other than u
// evaluates every property (items: every item) whatever its name:
// additionalProperties (items: items after the prefix … see itemEval)
// or a nested unevaluated keyword, which evaluates all that is left.
func (us unevScope) nestedAll(items bool) bool {
	for a := range us.scope {
		if a == us.u {
			continue
		}
		if (!items && a.UnevaluatedProperties != nil) || (items && a.UnevaluatedItems != nil) {
			return true
		}
	}
	return false
}

// evaluatesKey reports whether the scope evaluates the property k.
func (us unevScope) evaluatesKey(k string) bool {
	if us.nestedAll(false) {
		return true
	}
	for a := range us.scope {
		if a.AdditionalProperties != nil {
			return true
		}
		if _, ok := a.Properties[k]; ok {
			return true
		}
		for re := range a.PatternProperties {
			if re.MatchString(k) {
				return true
			}
		}
	}
	return false
}

// evaluatesFree reports whether the scope evaluates the undeclared keys
// that match exactly the patterns of mask (pats[i], declared by
// owner[i]).
func (us unevScope) evaluatesFree(mask uint64, owner []*jsonschema.Schema) bool {
	if us.nestedAll(false) {
		return true
	}
	for a := range us.scope {
		if a.AdditionalProperties != nil {
			return true
		}
	}
	for i, o := range owner {
		if mask&(uint64(1)<<i) != 0 && us.scope[o] {
			return true
		}
	}
	return false
}

// evaluatesItem reports whether the scope evaluates the item at index i
// (i ≥ every prefix: the items past all prefixes). Items that contains
// matches are evaluated too (2020-12); the caller handles contains.
func (us unevScope) evaluatesItem(i int) bool {
	if us.nestedAll(true) {
		return true
	}
	for a := range us.scope {
		prefix, rest := itemEval(a)
		if i < prefix || rest {
			return true
		}
	}
	return false
}

// itemEval returns how many leading items a schema's own keywords
// evaluate, and whether they evaluate every item after those: items
// (a schema), prefixItems/items (2020-12), items as an array with
// additionalItems (a schema or true) in earlier drafts.
func itemEval(a *jsonschema.Schema) (prefix int, rest bool) {
	switch it := a.Items.(type) {
	case *jsonschema.Schema:
		rest = true
	case []*jsonschema.Schema:
		prefix = len(it)
		switch ad := a.AdditionalItems.(type) {
		case *jsonschema.Schema:
			rest = true
		case bool:
			rest = ad
		}
	}
	if len(a.PrefixItems) > prefix {
		prefix = len(a.PrefixItems)
	}
	if a.Items2020 != nil {
		rest = true
	}
	return prefix, rest
}
