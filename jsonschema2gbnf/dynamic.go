package jsonschema2gbnf

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Dynamic references. $dynamicRef (2020-12, §8.2.3.2) and $recursiveRef
// (2019-09) resolve by the dynamic scope: when the static target carries
// the matching $dynamicAnchor ($recursiveAnchor: true), the target is the
// outermost schema resource of the evaluation path that declares that
// anchor. santhosh-tekuri/jsonschema, the validator the grammar must
// agree with, implements this as follows (v5.3.1):
//
//   - the scope is the chain of schemas on the evaluation path, from the
//     root of the document; the root's entry lists every subschema of
//     the whole document with a $dynamicAnchor (embedded resources
//     included), and the outermost entry that lists a schema with the
//     name (other than the static target) wins;
//   - among several such schemas in one entry, the first in a list built
//     from map iteration wins: the choice is not deterministic;
//   - while then/else of a schema with `if` is evaluated, the scope is
//     cut at that schema;
//   - for $recursiveRef, the outermost schema of the path with
//     $recursiveAnchor: true wins.
//
// The converter resolves a dynamic reference when its target is the same
// for every evaluation path, for the validator and the specification
// alike, and rewrites it into a static $ref before converting (the
// validator, CompileSchema, keeps the original):
//
//   - no other schema declares the anchor: the static target;
//   - exactly one other schema X declares it, X lies in the root resource
//     (no $id between the document root and X, so the root resource,
//     always the outermost of the dynamic scope, declares it), the static
//     target does not (one resource, one anchor), and no then/else leads
//     to the reference (the validator's cut): X;
//   - $recursiveRef: the root when it has $recursiveAnchor: true, else
//     the static target when no other schema has one.
//
// Any other dynamic reference is an *UnsupportedError naming
// $dynamicRef ($recursiveRef) and its pointer in strict mode; lenient
// mode accepts any of the candidate targets (their anyOf, a superset).
// It is never read as a static reference silently.

// dynRef is a dynamic reference whose target depends on the scope.
type dynRef struct {
	ptr    string               // the schema holding the keyword
	kw     string               // "$dynamicRef" or "$recursiveRef"
	to     []*jsonschema.Schema // the target; several when not resolved (static target first)
	reason string               // why it is not resolved; "" when it is
}

// subschemaKeys are the keywords whose values are subschemas, per draft,
// as santhosh-tekuri lists them (its dynamic anchors come from that list).
func subschemaKeys(d *jsonschema.Draft) (self, items, props []string) {
	self = []string{"not", "additionalProperties", "items", "additionalItems"}
	items = []string{"allOf", "anyOf", "oneOf", "items"}
	props = []string{"definitions", "properties", "patternProperties", "dependencies"}
	if d == jsonschema.Draft4 {
		return
	}
	self = append(self, "propertyNames", "contains")
	if d == jsonschema.Draft6 {
		return
	}
	self = append(self, "if", "then", "else")
	if d == jsonschema.Draft7 {
		return
	}
	self = append(self, "unevaluatedProperties", "unevaluatedItems", "contentSchema")
	props = append(props, "$defs", "dependentSchemas")
	if d == jsonschema.Draft2019 {
		return
	}
	items = append(items, "prefixItems")
	return
}

// walkSchemas calls fn for every schema object of a raw document (the
// root included) with its JSON pointer ("" for the root) and the pointer
// of the schema resource it lies in: the nearest schema on the way from
// the root to it (itself included) that declares a new base URI with
// $id, "" for the root resource.
func walkSchemas(v any, d *jsonschema.Draft, fn func(o *ordObj, ptr, res string)) {
	self, items, props := subschemaKeys(d)
	var walk func(v any, ptr, res string, depth int)
	walk = func(v any, ptr, res string, depth int) {
		o, ok := v.(*ordObj)
		if !ok || depth > MaxNestingDepth {
			return
		}
		if ptr != "" && newBase(o, d) {
			res = ptr
		}
		fn(o, ptr, res)
		if !hasSubschemaKeyword(o) {
			return
		}
		for _, k := range self {
			if x, ok := o.vals[k]; ok {
				walk(x, ptr+"/"+escapeToken(k), res, depth+1)
			}
		}
		for _, k := range items {
			if arr, ok := o.vals[k].([]any); ok {
				for i, x := range arr {
					walk(x, ptr+"/"+escapeToken(k)+"/"+strconv.Itoa(i), res, depth+1)
				}
			}
		}
		for _, k := range props {
			if m, ok := o.vals[k].(*ordObj); ok {
				for _, name := range m.keys {
					walk(m.vals[name], ptr+"/"+escapeToken(k)+"/"+escapeToken(name), res, depth+1)
				}
			}
		}
	}
	walk(v, "", "", 0)
}

// idKey is the keyword of a schema's id in draft d.
func idKey(d *jsonschema.Draft) string {
	if d == jsonschema.Draft4 {
		return "id"
	}
	return "$id"
}

// before2019 reports whether d is draft 4, 6 or 7: ids carry anchors, and
// a $ref beside an id cancels it (santhosh-tekuri's reading).
func before2019(d *jsonschema.Draft) bool {
	return d == jsonschema.Draft4 || d == jsonschema.Draft6 || d == jsonschema.Draft7
}

// newBase reports whether a schema object declares a base URI of its own
// (an id that is not only a fragment).
func newBase(o *ordObj, d *jsonschema.Draft) bool {
	id, ok := o.vals[idKey(d)].(string)
	return ok && id != "" && id[0] != '#'
}

// anchorsOf lists the plain-name fragments a schema object declares, as
// santhosh-tekuri reads them in draft d: an id's fragment (drafts 4–7),
// $anchor (2019-09 on), $dynamicAnchor (2020-12).
func anchorsOf(o *ordObj, d *jsonschema.Draft) []string {
	var out []string
	if before2019(d) {
		if id, ok := o.vals[idKey(d)].(string); ok {
			// a fragment that is a JSON pointer is resolved as one, never
			// as an anchor
			if i := strings.IndexByte(id, '#'); i >= 0 && i+1 < len(id) && id[i+1] != '/' {
				out = append(out, id[i+1:])
			}
		}
		return out
	}
	if a, ok := o.vals["$anchor"].(string); ok {
		out = append(out, a)
	}
	if a, ok := o.vals["$dynamicAnchor"].(string); ok && d == jsonschema.Draft2020 {
		out = append(out, a)
	}
	return out
}

// checkAnchors rejects a document that declares one anchor name twice in
// one schema resource: the specification makes that an error, and the
// validator would resolve the name to either declaration at random (it
// looks it up in a map).
func checkAnchors(raw any, d *jsonschema.Draft) error {
	type key struct{ res, name string }
	first := map[key]string{}
	var err error
	walkSchemas(raw, d, func(o *ordObj, ptr, res string) {
		for _, a := range anchorsOf(o, d) {
			k := key{res, a}
			if p, dup := first[k]; dup && err == nil {
				err = &InvalidSchemaError{Pointer: "#" + ptr, Msg: fmt.Sprintf("anchor %q is declared twice in one schema resource (also at #%s)", a, p)}
			} else if !dup {
				first[k] = ptr
			}
		}
	})
	return err
}

func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// dynamicRefs lists the dynamic references of a document whose target
// depends on the dynamic scope, resolved where it does not (see above).
// locate returns the compiled schema at a pointer of the document.
func dynamicRefs(raw any, d *jsonschema.Draft, root *jsonschema.Schema, locate func(ptr string) *jsonschema.Schema) []dynRef {
	if d != jsonschema.Draft2019 && d != jsonschema.Draft2020 {
		return nil
	}
	type pos struct {
		ptr    string
		inRoot bool
	}
	anchors := map[string][]pos{} // $dynamicAnchor name → schemas declaring it
	var recursive []pos           // schemas with $recursiveAnchor: true
	var refs, ifs []pos
	walkSchemas(raw, d, func(o *ordObj, ptr, res string) {
		inRoot := res == ""
		if a, ok := o.vals["$dynamicAnchor"].(string); ok && d == jsonschema.Draft2020 {
			anchors[a] = append(anchors[a], pos{ptr, inRoot})
		}
		if b, ok := o.vals["$recursiveAnchor"].(bool); ok && b {
			recursive = append(recursive, pos{ptr, inRoot})
		}
		_, dyn := o.vals["$dynamicRef"]
		_, rec := o.vals["$recursiveRef"]
		if dyn || rec {
			refs = append(refs, pos{ptr, inRoot})
		}
		if _, ok := o.vals["if"]; ok {
			ifs = append(ifs, pos{ptr, inRoot})
		}
	})
	if len(refs) == 0 {
		return nil
	}
	inRootOf := map[*jsonschema.Schema]bool{}
	schemasOf := func(ps []pos) []*jsonschema.Schema {
		var out []*jsonschema.Schema
		for _, p := range ps {
			if s := locate(p.ptr); s != nil {
				out = append(out, s)
				inRootOf[s] = inRootOf[s] || p.inRoot
			}
		}
		return out
	}
	byAnchor := map[string][]*jsonschema.Schema{}
	for a, ps := range anchors {
		byAnchor[a] = schemasOf(ps)
	}
	// what then/else lead to: the validator cuts the dynamic scope there
	var thenElse []*jsonschema.Schema
	for _, h := range schemasOf(ifs) {
		thenElse = append(thenElse, h.Then, h.Else)
	}
	cut := reachable(thenElse, byAnchor)
	var out []dynRef
	for _, p := range refs {
		s := locate(p.ptr)
		if s == nil {
			continue
		}
		ptr := "#" + p.ptr
		if s.DynamicRef != nil {
			t := s.DynamicRef
			name := dynamicAnchorOf(s, raw, p.ptr)
			if name != "" && t.DynamicAnchor == name {
				var others []*jsonschema.Schema
				for _, x := range byAnchor[name] {
					if x != t {
						others = append(others, x)
					}
				}
				switch {
				case len(others) == 0:
					// the static target whatever the scope
				case len(others) == 1 && inRootOf[others[0]] && !inRootOf[t] && !cut[s]:
					out = append(out, dynRef{ptr: ptr, kw: "$dynamicRef", to: others})
				default:
					reason := fmt.Sprintf("its target depends on the dynamic scope: %d schemas declare $dynamicAnchor %q", len(others)+1, name)
					switch {
					case len(others) == 1 && !inRootOf[others[0]]:
						reason += " and the other one is not in the root resource"
					case len(others) == 1 && inRootOf[t]:
						reason += " in the root resource"
					case len(others) == 1:
						reason += ", and then/else lead to it (the validator cuts the scope there)"
					}
					out = append(out, dynRef{ptr: ptr, kw: "$dynamicRef", to: append([]*jsonschema.Schema{t}, others...), reason: reason})
				}
			}
		}
		if s.RecursiveRef != nil && s.RecursiveRef.RecursiveAnchor && s.RecursiveRef != root {
			t := s.RecursiveRef
			if root.RecursiveAnchor {
				out = append(out, dynRef{ptr: ptr, kw: "$recursiveRef", to: []*jsonschema.Schema{root}})
				continue
			}
			var others []*jsonschema.Schema
			for _, x := range schemasOf(recursive) {
				if x != t {
					others = append(others, x)
				}
			}
			if len(others) > 0 {
				out = append(out, dynRef{ptr: ptr, kw: "$recursiveRef", to: append([]*jsonschema.Schema{t}, others...),
					reason: fmt.Sprintf("its target depends on the dynamic scope: %d schemas declare $recursiveAnchor and the root does not", len(others)+1)})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ptr < out[j].ptr })
	return out
}

// dynamicAnchorOf returns the anchor name of a $dynamicRef ("" for a
// JSON pointer or an empty fragment: those are static references).
func dynamicAnchorOf(s *jsonschema.Schema, raw any, ptr string) string {
	v, ok := rawPointer(raw, ptr)
	if !ok {
		return ""
	}
	o, ok := v.(*ordObj)
	if !ok {
		return ""
	}
	ref, _ := o.vals["$dynamicRef"].(string)
	i := strings.IndexByte(ref, '#')
	if i < 0 {
		return ""
	}
	frag := ref[i+1:]
	if frag == "" || frag[0] == '/' {
		return ""
	}
	return frag
}

// reachable returns the schemas reachable from the given ones through
// any subschema keyword; a $dynamicRef leads to every schema that
// declares its anchor as well as to its static target.
func reachable(from []*jsonschema.Schema, byAnchor map[string][]*jsonschema.Schema) map[*jsonschema.Schema]bool {
	seen := map[*jsonschema.Schema]bool{}
	var stack []*jsonschema.Schema
	push := func(s *jsonschema.Schema) {
		if s != nil && !seen[s] {
			seen[s] = true
			stack = append(stack, s)
		}
	}
	for _, s := range from {
		push(s)
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, x := range subschemasOf(s) {
			push(x)
		}
		if s.DynamicRef != nil {
			for _, x := range byAnchor[s.DynamicRef.DynamicAnchor] {
				push(x)
			}
		}
	}
	return seen
}

// subschemasOf lists the compiled subschemas of s.
func subschemasOf(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.DynamicRef, s.Not, s.If, s.Then, s.Else,
		s.PropertyNames, s.UnevaluatedProperties, s.Items2020, s.Contains, s.UnevaluatedItems, s.ContentSchema}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	out = append(out, s.PrefixItems...)
	for _, x := range s.Properties {
		out = append(out, x)
	}
	for _, x := range s.PatternProperties {
		out = append(out, x)
	}
	for _, x := range s.DependentSchemas {
		out = append(out, x)
	}
	for _, x := range s.Dependencies {
		if x, ok := x.(*jsonschema.Schema); ok {
			out = append(out, x)
		}
	}
	for _, x := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch x := x.(type) {
		case *jsonschema.Schema:
			out = append(out, x)
		case []*jsonschema.Schema:
			out = append(out, x...)
		}
	}
	return out
}

// staticRefs rewrites the dynamic references of l's raw document into
// static ones and recompiles it for the conversion (l.schema); the
// validator (l.judge) keeps the original. A reference whose target
// depends on the scope is an *UnsupportedError in strict mode; lenient
// mode references the anyOf of its candidates and warns.
func (c *conv) staticRefs() error {
	if len(c.l.dyn) == 0 {
		return nil
	}
	var errs []error
	for _, r := range c.l.dyn {
		if r.reason != "" && !c.unsupported(r.ptr, r.kw, r.reason) {
			errs = append(errs, c.errs[len(c.errs)-1])
		}
	}
	if len(errs) > 0 {
		return sortErrors(errs)
	}
	raw := cloneRaw(c.l.raw)
	for _, r := range c.l.dyn {
		v, _ := rawPointer(raw, strings.TrimPrefix(r.ptr, "#"))
		o := v.(*ordObj)
		delete(o.vals, r.kw)
		for i, k := range o.keys {
			if k == r.kw {
				o.keys = append(o.keys[:i], o.keys[i+1:]...)
				break
			}
		}
		var sub *ordObj
		if len(r.to) == 1 {
			sub = refObj(r.to[0].Location)
		} else {
			var alts []any
			for _, t := range r.to {
				alts = append(alts, refObj(t.Location))
			}
			sub = &ordObj{keys: []string{"anyOf"}, vals: map[string]any{"anyOf": alts}}
		}
		if _, has := o.vals["$ref"]; !has && len(r.to) == 1 {
			o.keys = append(o.keys, "$ref")
			o.vals["$ref"] = r.to[0].Location
			continue
		}
		all, _ := o.vals["allOf"].([]any)
		if _, has := o.vals["allOf"]; !has {
			o.keys = append(o.keys, "allOf")
		}
		o.vals["allOf"] = append(append([]any{}, all...), sub)
	}
	s, _, err := compileWith([]byte(canonicalJSON(raw)), c.l.draft)
	if err != nil {
		return err
	}
	c.l.schema, c.l.raw = s, raw
	return nil
}

func refObj(uri string) *ordObj {
	return &ordObj{keys: []string{"$ref"}, vals: map[string]any{"$ref": uri}}
}

// cloneRaw copies the objects and arrays of a raw document.
func cloneRaw(v any) any {
	switch x := v.(type) {
	case *ordObj:
		n := &ordObj{keys: append([]string(nil), x.keys...), vals: make(map[string]any, len(x.vals))}
		for k, e := range x.vals {
			n.vals[k] = cloneRaw(e)
		}
		return n
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneRaw(e)
		}
		return out
	}
	return v
}
