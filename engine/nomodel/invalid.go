package nomodel

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/internal/valerr"
)

// NearMiss is an invalid instance made on purpose: a valid instance with
// one change that breaks exactly one constraint of the schema, verified
// by the validator (santhosh-tekuri) to fail with a single error, at
// Pointer, for Keyword.
type NearMiss struct {
	Doc     []byte // the invalid document
	Pointer string // JSON pointer of the changed value ("" is the root)
	Keyword string // the keyword it breaks: required, additionalProperties, maxItems, minItems, maxLength, minLength, pattern, format, enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, type
	Message string // the validator's message
}

// ErrNoNearMiss reports a valid instance in which no single change breaks
// exactly one constraint (e.g. a schema that accepts everything).
var ErrNoNearMiss = errors.New("nomodel: no change of this instance breaks exactly one constraint")

// mutation is one candidate change.
type mutation struct {
	ptr     string
	keyword string
	apply   func() // changes the decoded document in place
	undo    func()
}

// maxMutationTries bounds the candidate changes tried per instance (each
// costs one validation).
const maxMutationTries = 24

// NearMiss changes the valid instance doc so that it breaks exactly one
// constraint: it lists the changes the schema suggests (a missing
// required property, an extra property where none is allowed, a value
// past a bound, a string off its pattern, format or enum, a wrong type,
// an array too long or too short), tries them in random order (seeded)
// and returns the first whose validation fails with exactly one error,
// at the changed value, for the intended keyword.
func (s *Schema) NearMiss(doc []byte, seed uint64) (*NearMiss, error) {
	root, err := decodeOrdered(doc)
	if err != nil {
		return nil, fmt.Errorf("nomodel: NearMiss: not JSON: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d))
	var muts []mutation
	var v view
	var walk func(val any, set func(any), ss []*jsonschema.Schema, ptr string, depth int)
	walk = func(val any, set func(any), ss []*jsonschema.Schema, ptr string, depth int) {
		if depth > maxRawDepth || len(ss) == 0 {
			return
		}
		v.build(s, ss, func(int) int { return 0 })
		muts = append(muts, s.valueMutations(&v, val, set, ptr, rng)...)
		switch x := val.(type) {
		case *object:
			props := append([]propView(nil), v.props...)
			addl := append([]*jsonschema.Schema(nil), v.addl...)
			for i, k := range x.keys {
				sub := addl
				for _, p := range props {
					if p.name == k {
						sub = p.schemas
					}
				}
				i := i
				walk(x.vals[i], func(nv any) { x.vals[i] = nv }, sub, ptr+"/"+escapePtr(k), depth+1)
			}
		case []any:
			prefix := append([][]*jsonschema.Schema(nil), v.prefix...)
			items := append([]*jsonschema.Schema(nil), v.items...)
			for i := range x {
				sub := items
				if i < len(prefix) {
					sub = prefix[i]
				}
				i := i
				walk(x[i], func(nv any) { x[i] = nv }, sub, ptr+"/"+strconv.Itoa(i), depth+1)
			}
		}
	}
	walk(root, func(nv any) { root = nv }, []*jsonschema.Schema{s.root}, "", 0)
	// Keywords in random order, then sites: every kind of break is as
	// likely as any other, however many sites each has.
	rng.Shuffle(len(muts), func(i, j int) { muts[i], muts[j] = muts[j], muts[i] })
	var kws []string
	for _, mu := range muts {
		if !slices.Contains(kws, mu.keyword) {
			kws = append(kws, mu.keyword)
		}
	}
	slices.Sort(kws) // independent of the shuffle, then shuffled alone
	rng.Shuffle(len(kws), func(i, j int) { kws[i], kws[j] = kws[j], kws[i] })
	rank := map[string]int{}
	for i, k := range kws {
		rank[k] = i
	}
	seen := map[string]int{}
	order := make([]int, len(muts)) // round-robin over keywords
	for i, mu := range muts {
		order[i] = seen[mu.keyword]*len(rank) + rank[mu.keyword]
		seen[mu.keyword]++
	}
	idx := make([]int, len(muts))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return order[idx[a]] < order[idx[b]] })
	for i, j := range idx {
		mu := muts[j]
		if i == maxMutationTries {
			break
		}
		mu.apply()
		out := appendJSON(nil, root)
		if msg, ok := s.breaksOnly(out, mu.ptr, mu.keyword); ok {
			return &NearMiss{Doc: out, Pointer: mu.ptr, Keyword: mu.keyword, Message: msg}, nil
		}
		mu.undo()
	}
	return nil, ErrNoNearMiss
}

func escapePtr(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// breaksOnly validates doc and reports whether it fails with exactly one
// error, at ptr, for keyword.
func (s *Schema) breaksOnly(doc []byte, ptr, keyword string) (string, bool) {
	inst, err := decodePlain(doc)
	if err != nil {
		return "", false
	}
	err = s.root.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "", false
	}
	leaves := valerr.Leaves(ve)
	if len(leaves) != 1 {
		return "", false
	}
	l := leaves[0]
	if l.InstanceLocation != ptr || !strings.HasSuffix(l.KeywordLocation, "/"+keyword) {
		return "", false
	}
	return l.Message, true
}

// valueMutations lists the changes of one value that the view suggests.
func (s *Schema) valueMutations(v *view, val any, set func(any), ptr string, rng *rand.Rand) []mutation {
	var out []mutation
	replace := func(keyword string, nv any) {
		old := val
		out = append(out, mutation{ptr: ptr, keyword: keyword, apply: func() { set(nv) }, undo: func() { set(old) }})
	}
	// A wrong type: a value of a type the schema does not allow.
	if v.types != tAny && v.types != 0 {
		for _, c := range []struct {
			t typeSet
			v any
		}{{tString, "wrong type"}, {tInteger, jsonNumber("42")}, {tBoolean, true}, {tNull, nil}, {tObject, &object{}}, {tArray, []any{}}} {
			if v.types&c.t == 0 && !(c.t == tInteger && v.types&tNumber != 0) {
				replace("type", c.v)
				break
			}
		}
	}
	if v.hasEnum {
		replace(enumKeyword(v), "not one of the allowed values")
	}
	switch x := val.(type) {
	case *object:
		for _, name := range v.required {
			i := x.index(name)
			if i < 0 {
				continue
			}
			k, val := x.keys[i], x.vals[i]
			out = append(out, mutation{ptr: ptr, keyword: "required",
				apply: func() {
					x.keys = append(x.keys[:i:i], x.keys[i+1:]...)
					x.vals = append(x.vals[:i:i], x.vals[i+1:]...)
				},
				undo: func() {
					x.keys = append(x.keys[:i:i], append([]string{k}, x.keys[i:]...)...)
					x.vals = append(x.vals[:i:i], append([]any{val}, x.vals[i:]...)...)
				}})
		}
		if v.noAddl && len(v.patProps) == 0 {
			name := "unexpected_property"
			for x.index(name) >= 0 {
				name += "_"
			}
			out = append(out, mutation{ptr: ptr, keyword: "additionalProperties",
				apply: func() { x.keys, x.vals = append(x.keys, name), append(x.vals, "surprise") },
				undo:  func() { x.keys, x.vals = x.keys[:len(x.keys)-1], x.vals[:len(x.vals)-1] }})
		}
	case []any:
		if v.maxItems >= 0 && len(x) > 0 && v.maxItems < 1000 {
			long := append([]any(nil), x...)
			for len(long) <= v.maxItems {
				long = append(long, x[len(x)-1])
			}
			replace("maxItems", long)
		}
		if v.minItems > 0 && len(x) >= v.minItems {
			replace("minItems", append([]any(nil), x[:v.minItems-1]...))
		}
	case string:
		n := utf8.RuneCountInString(x)
		if v.maxLen >= 0 && v.maxLen < 100_000 {
			replace("maxLength", x+strings.Repeat("x", v.maxLen+1-min(n, v.maxLen)))
		}
		if v.minLen > 0 && n >= v.minLen {
			replace("minLength", string([]rune(x)[:v.minLen-1]))
		}
		for _, p := range v.patterns {
			re := p.re
			for _, cand := range []string{x + "!", "!" + x, "", "?", x + " ", strings.ToLower(x), strings.ToUpper(x)} {
				if !re.MatchString(cand) {
					replace("pattern", cand)
					break
				}
			}
		}
		if v.format != "" && formatGen(v.format) != genNone {
			replace("format", "not a valid "+v.format)
		}
	case fmt.Stringer: // json.Number
		r, ok := new(big.Rat).SetString(x.String())
		if !ok {
			break
		}
		if v.max != nil {
			nv := new(big.Rat).Add(v.max, big.NewRat(1, 1))
			if v.exclMax {
				nv = v.max
			}
			replace(boundKeyword("maximum", v.exclMax), jsonNumber(ratDecimal(nv)))
		}
		if v.min != nil {
			nv := new(big.Rat).Sub(v.min, big.NewRat(1, 1))
			if v.exclMin {
				nv = v.min
			}
			replace(boundKeyword("minimum", v.exclMin), jsonNumber(ratDecimal(nv)))
		}
		if v.multipleOf != nil {
			half := new(big.Rat).Mul(v.multipleOf, big.NewRat(1, 2))
			replace("multipleOf", jsonNumber(ratDecimal(new(big.Rat).Add(r, half))))
		}
		if v.types&tNumber == 0 && v.types&tInteger != 0 {
			replace("type", jsonNumber(ratDecimal(new(big.Rat).Add(r, big.NewRat(1, 2)))))
		}
	}
	_ = rng
	return out
}

func enumKeyword(v *view) string {
	if len(v.enum) == 1 {
		return "const"
	}
	return "enum"
}

func boundKeyword(k string, excl bool) string {
	if excl {
		return "exclusive" + strings.ToUpper(k[:1]) + k[1:]
	}
	return k
}

// jsonNumber is a number written as text (like json.Number).
type jsonNumber string

func (n jsonNumber) String() string { return string(n) }

// decodePlain decodes JSON as the validator wants it (maps, json.Number).
func decodePlain(doc []byte) (any, error) {
	v, err := decodeOrdered(doc)
	if err != nil {
		return nil, err
	}
	var plain func(any) any
	plain = func(x any) any {
		switch x := x.(type) {
		case *object:
			m := make(map[string]any, len(x.keys))
			for i, k := range x.keys {
				m[k] = plain(x.vals[i])
			}
			return m
		case []any:
			out := make([]any, len(x))
			for i, y := range x {
				out[i] = plain(y)
			}
			return out
		}
		return x
	}
	return plain(v), nil
}
