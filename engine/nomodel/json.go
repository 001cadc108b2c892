package nomodel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// errClosed ends a sentence early: the budget ran out, and the output was
// completed along a shortest completion (end-of-generation included).
var errClosed = errors.New("nomodel: closed out")

// follow says what may come after a value: the end of the document, or
// the next member or end of an object or array.
type follow uint8

const (
	fTop follow = iota
	fObject
	fArray
)

// Limits of the schema walk.
const (
	// proposalTries is how many realistic proposals a value gets before
	// the grammar chooses it byte by byte (each rejected proposal costs
	// one matcher step and its undo).
	proposalTries = 3
	// keyTries is how many free key names an object tries before it
	// lets the grammar spell one.
	keyTries = 4
	// softDepth is the nesting depth past which optional parts fade out
	// (see pressure): recursive schemas stay small.
	softDepth = 8
)

// nextSchema draws a sentence of a schema grammar by walking the JSON
// structure: the schema proposes, the matcher disposes.
func (s *Sampler) nextSchema() ([]byte, error) {
	m := s.m
	m.Reset()
	s.out, s.toks, s.closed = s.out[:0], s.toks[:0], 0
	if n := m.MinCompletion(); n > s.budget {
		return nil, fmt.Errorf("%w: it needs %d bytes, the budget is %d", ErrBudget, n, s.budget)
	}
	s.ptr = s.ptr[:0]
	err := s.value(fTop, []*jsonschema.Schema{s.p.Schema.root}, 0, "")
	if err == nil {
		err = s.end()
	}
	if err != nil && err != errClosed {
		return nil, err
	}
	for _, b := range s.out {
		s.toks = append(s.toks, int32(b))
	}
	return s.out, nil
}

// end finishes a sentence whose walk is over: along a shortest completion
// if the grammar wants more (it never should after a whole JSON value),
// then the end-of-generation token.
func (s *Sampler) end() error {
	if !s.m.CanEnd() {
		return s.closeOut()
	}
	return s.m.Accept(eogID)
}

// try feeds b to the matcher and reports whether it was accepted (if not,
// nothing changed). If b leaves too little of the budget for a shortest
// completion, it is undone, the output is closed out and try returns
// errClosed.
func (s *Sampler) try(b []byte) (bool, error) {
	if err := s.m.AcceptBytes(b); err != nil {
		var re *mask.RejectError
		if errors.As(err, &re) {
			return false, nil
		}
		return false, err
	}
	s.out = append(s.out, b...)
	if len(s.out)+s.m.MinCompletion() > s.budget {
		if err := s.undo(len(b)); err != nil {
			return false, err
		}
		return false, s.closeOut()
	}
	return true, nil
}

func (s *Sampler) tryString(b string) (bool, error) {
	s.vbuf = append(s.vbuf[:0], b...)
	return s.try(s.vbuf)
}

// undo takes back the last accepted step of n bytes.
func (s *Sampler) undo(n int) error {
	s.out = s.out[:len(s.out)-n]
	return s.m.Rollback(1)
}

// probe reports whether the matcher accepts b now, without keeping it.
func (s *Sampler) probe(b string) bool {
	s.vbuf = append(s.vbuf[:0], b...)
	if s.m.AcceptBytes(s.vbuf) != nil {
		return false
	}
	_ = s.m.Rollback(1)
	return true
}

// closeOut completes the output along a shortest completion and ends it;
// it returns errClosed, which unwinds the walk.
func (s *Sampler) closeOut() error {
	sc, ok := s.m.ShortestCompletion()
	if !ok {
		return errors.New("nomodel: cannot complete the output (the completion needs a token reference)")
	}
	if len(sc) > 0 {
		if err := s.m.AcceptBytes(sc); err != nil {
			return fmt.Errorf("nomodel: shortest completion rejected: %w", err)
		}
		s.out = append(s.out, sc...)
		s.closed = len(sc)
	}
	if err := s.m.Accept(eogID); err != nil {
		return fmt.Errorf("nomodel: end after the shortest completion rejected: %w", err)
	}
	return errClosed
}

// ends reports whether the value just written is complete where it
// stands: what may follow it is allowed now. Only numbers need this
// check: "12" may be a prefix of the only valid "120".
func (s *Sampler) ends(f follow) bool {
	switch f {
	case fObject:
		return s.probe(",") || s.probe("}")
	case fArray:
		return s.probe(",") || s.probe("]")
	}
	return s.m.CanEnd()
}

// firstTypes returns the JSON types a value may start with now.
func (s *Sampler) firstTypes() typeSet {
	s.m.FillMask(s.bits)
	has := func(b byte) bool { return s.bits[b/32]&(1<<(b%32)) != 0 }
	var t typeSet
	if has('{') {
		t |= tObject
	}
	if has('[') {
		t |= tArray
	}
	if has('"') {
		t |= tString
	}
	for _, b := range []byte("-0123456789") {
		if has(b) {
			t |= tNumber | tInteger
			break
		}
	}
	if has('t') || has('f') {
		t |= tBoolean
	}
	if has('n') {
		t |= tNull
	}
	return t
}

// pressure is how much the length-aware policy holds back optional parts
// at depth d: 1 = not at all, down to 0 as the output nears the budget or
// the nesting passes softDepth.
func (s *Sampler) pressure(d int) float64 {
	f := 1.0
	if used := float64(len(s.out)) / float64(s.budget); used > 0.25 {
		f = max(0, 1-2*(used-0.25))
	}
	for ; d > softDepth; d-- {
		f /= 2
	}
	return f
}

func (s *Sampler) viewAt(depth int) *view {
	for len(s.views) <= depth {
		s.views = append(s.views, &view{})
	}
	return s.views[depth]
}

func (s *Sampler) setName(depth int, name string) {
	for len(s.names) <= depth {
		s.names = append(s.names, "")
	}
	s.names[depth] = name
}

// value writes one JSON value for the schemas ss at nesting depth.
// name is its property name (or the array's, for an item).
func (s *Sampler) value(f follow, ss []*jsonschema.Schema, depth int, name string) error {
	v := s.viewAt(depth)
	v.build(s.p.Schema, ss, s.rng.IntN)
	s.setName(depth, name)
	allowed := s.firstTypes()
	if allowed == 0 {
		return s.walkValue(f, depth)
	}
	if v.hasEnum {
		if ok, err := s.pickOf(v.enum, true, 0, f, depth); ok || err != nil {
			return err
		}
		return s.walkValue(f, depth)
	}
	if len(v.examples) > 0 && s.rng.Float64() < s.pol.ExampleRate {
		if ok, err := s.pickOf(v.examples, false, v.nExample, f, depth); ok || err != nil {
			return err
		}
	}
	types := allowed & v.types
	if types == 0 {
		types = allowed
	}
	// One choice per JSON type (number and integer are one).
	var choices [6]typeSet
	n := 0
	for _, t := range []typeSet{tObject, tArray, tString, tNumber | tInteger, tBoolean, tNull} {
		if types&t != 0 {
			choices[n] = t
			n++
		}
	}
	switch t := choices[s.rng.IntN(n)]; t {
	case tObject:
		return s.object(v, depth)
	case tArray:
		return s.array(v, depth, name)
	case tString:
		return s.str(v, f, depth)
	case tNumber | tInteger:
		return s.number(v, types&tNumber == 0, f, depth)
	case tBoolean:
		lit := "false"
		if s.probe("t") && (!s.probe("f") || s.rng.IntN(2) == 0) {
			lit = "true"
		}
		return s.scalar(lit, SourceGenerator, "", f, depth)
	default:
		return s.scalar("null", SourceGenerator, "", f, depth)
	}
}

// scalar writes a literal the grammar allows, or falls back.
func (s *Sampler) scalar(lit string, src Source, gen string, f follow, depth int) error {
	start := len(s.out)
	ok, err := s.tryString(lit)
	if err != nil {
		return err
	}
	if !ok {
		return s.walkValue(f, depth)
	}
	s.record(src, gen, start)
	return nil
}

// pickOf writes one of the values in list, uniformly among those the
// grammar accepts here: enum members, or examples (the first nExample)
// and the default.
func (s *Sampler) pickOf(list []any, enum bool, nExample int, f follow, depth int) (bool, error) {
	n := len(list)
	first := s.rng.IntN(n)
	for i := 0; i < n; i++ {
		k := (first + i) % n
		if i > 0 && i < proposalTries {
			k = s.rng.IntN(n) // random picks first, then a scan: uniform while all fit
		}
		start := len(s.out)
		s.vbuf = appendJSON(s.vbuf[:0], list[k])
		s.stats.Proposals++
		ok, err := s.try(s.vbuf)
		if err != nil {
			return false, err
		}
		if ok && isNumberText(s.out[start:]) && !s.ends(f) {
			if err := s.undo(len(s.out) - start); err != nil {
				return false, err
			}
			ok = false
		}
		if !ok {
			s.stats.Rejected++
			continue
		}
		src := SourceEnum
		switch {
		case !enum && k < nExample:
			src = SourceExample
		case !enum:
			src = SourceDefault
		}
		s.record(src, "", start)
		return true, nil
	}
	return false, nil
}

func isNumberText(b []byte) bool {
	return len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9')
}

// record counts a value and reports it to Params.OnValue.
func (s *Sampler) record(src Source, gen string, start int) {
	s.stats.Values[src]++
	if s.p.OnValue != nil {
		s.p.OnValue(Value{Pointer: "/" + strings.Join(s.ptr, "/"), Source: src, Generator: gen, Text: s.out[start:]})
	}
}

func (s *Sampler) pushPtr(tok string) {
	if s.p.OnValue != nil {
		s.ptr = append(s.ptr, strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
}

func (s *Sampler) popPtr() {
	if s.p.OnValue != nil {
		s.ptr = s.ptr[:len(s.ptr)-1]
	}
}

// str writes a string: from the format's generator, the name's, the
// pattern's derivation, or words; the grammar byte by byte if none fits.
func (s *Sampler) str(v *view, f follow, depth int) error {
	words := nameWords(s.words[:0], s.names[depth])
	s.words = words
	var parent []string
	if depth > 0 {
		parent = nameWords(nil, s.names[depth-1])
	}
	fg := formatGen(v.format)
	ng := nameGen(words, parent, false)
	if ng == genNone {
		ng = annotationGen(v.title, v.desc, false)
	}
	for attempt := 0; attempt < proposalTries+1; attempt++ {
		var text, gname string
		switch {
		case fg != genNone:
			text, gname = s.fk.text(fg, words), fg.String()
		case len(v.patterns) > 0 && attempt == 0 && ng != genNone && ng != genWord:
			text, gname = s.fk.text(ng, words), ng.String()
		case len(v.patterns) > 0:
			var ok bool
			if text, ok = s.patternText(v.patterns[attempt%len(v.patterns)].syn); !ok {
				continue
			}
			gname = "pattern"
		default:
			text, gname = s.fk.fitLength(s.fk.text(ng, words), v.minLen, v.maxLen), ng.String()
		}
		start := len(s.out)
		s.vbuf = appendQuoted(s.vbuf[:0], text)
		s.stats.Proposals++
		ok, err := s.try(s.vbuf)
		if err != nil {
			return err
		}
		if ok {
			s.record(SourceGenerator, gname, start)
			return nil
		}
		s.stats.Rejected++
	}
	return s.walkValue(f, depth)
}

// number writes a number in the plausible range of its name, inside the
// schema's bounds.
func (s *Sampler) number(v *view, integer bool, f follow, depth int) error {
	words := nameWords(s.words[:0], s.names[depth])
	s.words = words
	g := nameGen(words, nil, true)
	if g == genNone {
		g = annotationGen(v.title, v.desc, true)
	}
	for attempt := 0; attempt < proposalTries; attempt++ {
		text, ok := s.fk.number(v, g, integer)
		if !ok {
			break
		}
		if !inBounds(v, text) {
			continue
		}
		start := len(s.out)
		s.stats.Proposals++
		ok, err := s.tryString(text)
		if err != nil {
			return err
		}
		if ok && !s.ends(f) {
			if err := s.undo(len(s.out) - start); err != nil {
				return err
			}
			ok = false
		}
		if ok {
			s.record(SourceGenerator, g.String(), start)
			return nil
		}
		s.stats.Rejected++
	}
	return s.walkValue(f, depth)
}

// object writes an object: its declared properties in declaration order
// (required ones always, optional ones at the policy's rate), perhaps
// free keys, and whatever else the grammar needs before it lets the
// object close. No key is written twice.
func (s *Sampler) object(v *view, depth int) error {
	if ok, err := s.tryString("{"); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("nomodel: '{' allowed by the mask but rejected")
		}
		return err
	}
	for len(s.keys) <= depth {
		s.keys = append(s.keys, nil)
	}
	s.keys[depth] = s.keys[depth][:0]
	// v is reused by the nested values: copy what the loop needs.
	props := append([]propView(nil), v.props...)
	required := append([]string(nil), v.required...)
	patProps := append([]patProp(nil), v.patProps...)
	addl := append([]*jsonschema.Schema(nil), v.addl...)
	noAddl, maxProps := v.noAddl, v.maxProps
	press := s.pressure(depth)
	order := props
	if s.pol.AnyOrder && len(props) <= jsonschema2gbnf.MaxAnyOrderProperties {
		// The grammar takes the declared properties in any order: draw
		// one (the presence draws come after, as in schema order).
		order = append([]propView(nil), props...)
		s.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	for _, p := range order {
		if !containsStr(required, p.name) && s.rng.Float64() >= s.pol.OptionalRate*press {
			continue
		}
		if maxProps >= 0 && len(s.keys[depth]) >= maxProps {
			break
		}
		if err := s.member(p.name, p.schemas, depth); err != nil {
			if err == errSkip {
				continue
			}
			return err
		}
	}
	// Free keys: maps draw a count like an array's length; objects with
	// declared properties get some at ExtraKeyRate.
	extra := 0
	if !noAddl || len(patProps) > 0 {
		if len(props) == 0 {
			extra = s.lengthIn(0, -1, press)
		} else if s.rng.Float64() < s.pol.ExtraKeyRate*press {
			extra = 1 + s.rng.IntN(2)
		}
	}
	if maxProps >= 0 {
		extra = min(extra, maxProps-len(s.keys[depth]))
	}
	for i := 0; i < extra; i++ {
		if err := s.freeMember(props, patProps, addl, depth, false); err != nil && err != errSkip {
			return err
		}
	}
	for {
		ok, err := s.tryString("}")
		if err != nil || ok {
			return err
		}
		// The grammar wants more: a declared property it still allows,
		// else a free key.
		done := false
		for _, p := range props {
			if containsStr(s.keys[depth], p.name) {
				continue
			}
			if err := s.member(p.name, p.schemas, depth); err != errSkip {
				if err != nil {
					return err
				}
				done = true
				break
			}
		}
		if !done {
			for _, name := range required {
				if containsStr(s.keys[depth], name) {
					continue
				}
				if err := s.member(name, addl, depth); err != errSkip {
					if err != nil {
						return err
					}
					done = true
					break
				}
			}
		}
		if !done {
			err := s.freeMember(props, patProps, addl, depth, true)
			if err == errSkip {
				return s.closeOut()
			}
			if err != nil {
				return err
			}
		}
	}
}

// errSkip reports a key the grammar does not allow here.
var errSkip = errors.New("nomodel: key not allowed")

// member writes `,"name":value` (no comma first), or returns errSkip if
// the grammar does not allow the key here.
func (s *Sampler) member(name string, ss []*jsonschema.Schema, depth int) error {
	s.vbuf = s.vbuf[:0]
	if len(s.keys[depth]) > 0 {
		s.vbuf = append(s.vbuf, ',')
	}
	s.vbuf = appendQuoted(s.vbuf, name)
	s.vbuf = append(s.vbuf, ':')
	ok, err := s.try(s.vbuf)
	if err != nil {
		return err
	}
	if !ok {
		return errSkip
	}
	s.keys[depth] = append(s.keys[depth], name)
	s.pushPtr(name)
	err = s.value(fObject, ss, depth+1, name)
	s.popPtr()
	return err
}

// freeMember writes a member with a key that is not declared and not yet
// used: a name from a patternProperties pattern, from propertyNames, or a
// word; with spell, the grammar spells the key when no name fits.
func (s *Sampler) freeMember(props []propView, patProps []patProp, addl []*jsonschema.Schema, depth int, spell bool) error {
	declared := func(name string) bool {
		for _, p := range props {
			if p.name == name {
				return true
			}
		}
		return false
	}
	for try := 0; try < keyTries; try++ {
		var name string
		if len(patProps) > 0 && (try%2 == 0 || s.rng.IntN(2) == 0) {
			pp := patProps[s.rng.IntN(len(patProps))]
			if pp.syn == nil {
				continue
			}
			var ok bool
			if name, ok = s.patternText(pp.syn); !ok {
				continue
			}
		} else {
			name = strings.ToLower(s.fk.f.Noun())
			if s.rng.IntN(3) == 0 {
				name += "_" + strings.ToLower(s.fk.f.Noun())
			}
			name = strings.ReplaceAll(name, " ", "_")
		}
		if declared(name) || containsStr(s.keys[depth], name) {
			continue
		}
		ss := append([]*jsonschema.Schema(nil), addl...)
		for _, pp := range patProps {
			if pp.re.MatchString(name) {
				ss = append(ss, pp.schema)
			}
		}
		if err := s.member(name, ss, depth); err != errSkip {
			return err
		}
	}
	if !spell {
		return errSkip
	}
	return s.spellMember(depth)
}

// spellMember lets the grammar spell a key (byte by byte, readable
// choices) that is not a key of the object yet, then writes its value.
func (s *Sampler) spellMember(depth int) error {
	for try := 0; try < keyTries; try++ {
		mark, steps := len(s.out), s.m.Tokens()
		if len(s.keys[depth]) > 0 {
			if ok, err := s.tryString(","); err != nil || !ok {
				if err == nil {
					err = errSkip
				}
				return err
			}
		}
		keyStart := len(s.out)
		if err := s.walkKey(); err != nil {
			return err
		}
		var name string
		if err := unquote(s.out[keyStart:], &name); err == nil && !containsStr(s.keys[depth], name) {
			if ok, err := s.tryString(":"); err != nil {
				return err
			} else if ok {
				s.keys[depth] = append(s.keys[depth], name)
				s.pushPtr(name)
				err := s.value(fObject, nil, depth+1, name)
				s.popPtr()
				return err
			}
		}
		// A duplicate key (or no colon allowed after it): take it back.
		if err := s.m.Rollback(s.m.Tokens() - steps); err != nil {
			return err
		}
		s.out = s.out[:mark]
	}
	return errSkip
}

// unquote decodes a JSON string.
func unquote(b []byte, dst *string) error {
	u, err := strconv.Unquote(string(b))
	if err != nil || !strings.HasPrefix(string(b), `"`) {
		// strconv does not know \/ and \uXXXX surrogate pairs: a key the
		// grammar spelt that way is simply not used.
		return errors.New("not a plain JSON string")
	}
	*dst = u
	return nil
}

// lengthIn draws a length uniformly over [ArrayMin, ArrayMax] ∩ [lo, hi]
// (hi -1: none), the schema's bound winning where they do not meet; the
// part above lo shrinks with the policy's pressure.
func (s *Sampler) lengthIn(lo, hi int, press float64) int {
	lo = max(lo, 0)
	a, b := max(s.pol.ArrayMin, lo), s.pol.ArrayMax
	if hi >= 0 {
		b = min(b, hi)
	}
	if a > b {
		if hi >= 0 && a > hi {
			return hi
		}
		return a
	}
	b = a + int(float64(b-a)*press)
	return a + s.rng.IntN(b-a+1)
}

// array writes an array of a length drawn by the policy, items from
// prefixItems/items (one of them from contains when the schema has it),
// and more where the grammar wants more.
func (s *Sampler) array(v *view, depth int, name string) error {
	if ok, err := s.tryString("["); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("nomodel: '[' allowed by the mask but rejected")
		}
		return err
	}
	prefix := append([][]*jsonschema.Schema(nil), v.prefix...)
	items := append([]*jsonschema.Schema(nil), v.items...)
	contains := append([]*jsonschema.Schema(nil), v.contains...)
	n := s.lengthIn(v.minItems, v.maxItems, s.pressure(depth))
	at := -1
	if len(contains) > 0 && n > 0 {
		at = s.rng.IntN(n)
	}
	item := singular(name)
	for i := 0; ; i++ {
		if i >= n {
			ok, err := s.tryString("]")
			if err != nil || ok {
				return err
			}
		}
		if i > 0 {
			ok, err := s.tryString(",")
			if err != nil {
				return err
			}
			if !ok {
				if ok, err := s.tryString("]"); err != nil || ok {
					return err
				}
				return s.closeOut()
			}
		}
		ss := items
		if i < len(prefix) {
			ss = prefix[i]
		}
		if i == at || (i >= n && len(contains) > 0) {
			ss = append(append([]*jsonschema.Schema(nil), ss...), contains...)
		}
		s.pushPtr(strconv.Itoa(i))
		err := s.value(fArray, ss, depth+1, item)
		s.popPtr()
		if err != nil {
			return err
		}
	}
}

// singular makes an item's name from its array's: "phones" → "phone",
// "addresses" → "address", "tags" → "tag".
func singular(name string) string {
	switch {
	case strings.HasSuffix(name, "sses"), strings.HasSuffix(name, "xes"), strings.HasSuffix(name, "ches"):
		return name[:len(name)-2]
	case strings.HasSuffix(name, "ies") && len(name) > 4:
		return name[:len(name)-3] + "y"
	case strings.HasSuffix(name, "s") && !strings.HasSuffix(name, "ss") && len(name) > 3:
		return name[:len(name)-1]
	}
	return name
}
