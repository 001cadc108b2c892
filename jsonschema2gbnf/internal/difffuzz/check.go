package difffuzz

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/earley"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/schemabench"
	"github.com/structgen/structgen/mask"
)

// Vocab is a named vocabulary for the random walks.
type Vocab struct {
	Name string
	V    *mask.Vocab
}

// Options say how much one schema is exercised.
type Options struct {
	Instances int     // random instances (plus the sentences and their mutations)
	Sentences int     // sentences of the grammar (Earley generator), each also mutated twice
	MaxBytes  int     // longest sentence
	Walks     int     // random walks through the mask per vocabulary
	Steps     int     // tokens drawn per walk before the close-out
	Vocabs    []Vocab // vocabularies for the walks (none: no walks)
	Lenient   bool    // also convert in lenient mode (must not fail where strict succeeds)
}

// Failure is one disagreement with the validator, or a crash.
type Failure struct {
	Kind   string // accepted-invalid, sentence-invalid, walk-invalid, walk-stuck, bad-grammar, panic, inconsistent
	Schema string
	Doc    string
	Detail string
}

func (f Failure) String() string {
	return fmt.Sprintf("%s\n  schema: %s\n  doc:    %s\n  detail: %s", f.Kind, f.Schema, clip(f.Doc, 2000), f.Detail)
}

// Stats accumulate over schemas.
type Stats struct {
	Schemas     int            // generated
	Converted   int            // converted in strict mode
	Unsupported map[string]int // strict mode rejections by keyword (schemas)
	Errors      map[string]int // other conversion failures by kind
	Pairs       int            // schema × instance pairs checked against the validator
	Valid       int            // of which the validator accepts
	Rejected    int            // valid instances the grammar rejects once formatted (completeness)
	Sentences   int            // grammar sentences validated
	Walks       int            // walks decoded to a complete document and validated
	WalkTokens  int            // tokens drawn in those walks
	MaskLimit   int            // grammars mask.Compile refused (a limit)
	Failures    []Failure
	// RejectedExamples keeps a few completeness gaps for the report.
	RejectedExamples []Failure
}

// NewStats returns empty stats.
func NewStats() *Stats {
	return &Stats{Unsupported: map[string]int{}, Errors: map[string]int{}}
}

// Add merges o into s.
func (s *Stats) Add(o *Stats) {
	s.Schemas += o.Schemas
	s.Converted += o.Converted
	for k, v := range o.Unsupported {
		s.Unsupported[k] += v
	}
	for k, v := range o.Errors {
		s.Errors[k] += v
	}
	s.Pairs += o.Pairs
	s.Valid += o.Valid
	s.Rejected += o.Rejected
	s.Sentences += o.Sentences
	s.Walks += o.Walks
	s.WalkTokens += o.WalkTokens
	s.MaskLimit += o.MaskLimit
	s.Failures = append(s.Failures, o.Failures...)
	if len(s.RejectedExamples) < 50 {
		s.RejectedExamples = append(s.RejectedExamples, o.RejectedExamples...)
	}
}

// Check exercises one schema: strict conversion (with options the engine
// uses, drawn from ch); on success, every
// instance (random ones, the grammar's sentences and their mutations) is
// judged by the validator and by the grammar, written as generated and
// as Format writes it; then random walks through the mask. Choices come
// from ch. It records into st and returns the failures it found.
func Check(ch Chooser, schema []byte, o Options, st *Stats) (fails []Failure) {
	fail := func(kind, doc, detail string) {
		fails = append(fails, Failure{Kind: kind, Schema: string(schema), Doc: doc, Detail: detail})
	}
	defer func() {
		if r := recover(); r != nil {
			fail("panic", "", fmt.Sprint(r))
		}
		st.Failures = append(st.Failures, fails...)
	}()
	st.Schemas++
	// the options the engine may pass: compact or flexible whitespace,
	// schema order or any property order
	var opts []jsonschema2gbnf.Option
	switch ch.Intn(6) {
	case 0:
		opts = []jsonschema2gbnf.Option{jsonschema2gbnf.FlexibleWhitespace(2)}
	case 1:
		opts = []jsonschema2gbnf.Option{jsonschema2gbnf.AnyPropertyOrder()}
	case 2:
		opts = []jsonschema2gbnf.Option{jsonschema2gbnf.FlexibleWhitespace(0), jsonschema2gbnf.AnyPropertyOrder()}
	}
	judge, jerr := jsonschema2gbnf.CompileSchema(schema)
	src, err := jsonschema2gbnf.Convert(schema, opts...)
	if o.Lenient {
		lsrc, lerr := jsonschema2gbnf.Convert(schema, append(opts, jsonschema2gbnf.Lenient(nil))...)
		if lerr == nil {
			if _, perr := gbnf.Parse(lsrc); perr != nil {
				fail("bad-grammar", "", "lenient grammar: "+perr.Error())
			}
		} else if err == nil {
			fail("inconsistent", "", "strict converts, lenient fails: "+lerr.Error())
		}
	}
	if err != nil {
		var ul jsonschema2gbnf.ErrorList
		var ue *jsonschema2gbnf.UnsupportedError
		switch {
		case errors.As(err, &ul) || errors.As(err, &ue):
			seen := map[string]bool{}
			var each func(e error)
			each = func(e error) {
				var l jsonschema2gbnf.ErrorList
				var u *jsonschema2gbnf.UnsupportedError
				switch {
				case errors.As(e, &l):
					for _, x := range l {
						each(x)
					}
				case errors.As(e, &u):
					if !seen[u.Keyword] {
						seen[u.Keyword] = true
						st.Unsupported[u.Keyword]++
					}
				default:
					st.Errors[schemabench.Kind(e)]++
				}
			}
			each(err)
		default:
			st.Errors[schemabench.Kind(err)]++
		}
		return fails
	}
	if jerr != nil {
		fail("inconsistent", "", "Convert succeeds, CompileSchema fails: "+jerr.Error())
		return fails
	}
	st.Converted++
	g, err := gbnf.Parse(src)
	if err != nil {
		fail("bad-grammar", "", err.Error())
		return fails
	}
	rec := earley.New(g)
	rng := rand.New(rand.NewSource(int64(ch.Intn(1 << 30))))
	docs := Instances(ch, schema, o.Instances)
	for i := 0; i < o.Sentences; i++ {
		doc, ok := earley.Generate(g, rng, o.MaxBytes)
		if !ok {
			break
		}
		st.Sentences++
		if err := jsonschema2gbnf.Validate(judge, doc); err != nil {
			fail("sentence-invalid", string(doc), err.Error())
			continue
		}
		docs = append(docs, doc)
		for k := 0; k < 2; k++ {
			if m, ok := Mutate(ch, doc); ok {
				docs = append(docs, m)
			}
		}
	}
	for _, doc := range docs {
		verr := jsonschema2gbnf.Validate(judge, doc)
		accRaw := rec.Accepts(doc)
		f, ferr := jsonschema2gbnf.Format(schema, doc, opts...)
		accFmt := ferr == nil && rec.Accepts(f)
		st.Pairs++
		if verr == nil {
			st.Valid++
			if !accFmt {
				st.Rejected++
				if len(st.RejectedExamples) < 50 {
					st.RejectedExamples = append(st.RejectedExamples, Failure{Kind: "valid-rejected", Schema: string(schema), Doc: string(f)})
				}
			}
			continue
		}
		switch {
		case accRaw:
			fail("accepted-invalid", string(doc), verr.Error())
		case accFmt:
			fail("accepted-invalid", string(f), verr.Error())
		}
	}
	for _, v := range o.Vocabs {
		walks(ch, g, judge, v, o, st, fail)
	}
	return fails
}

// walks decodes random walks through the mask of g over vocabulary v:
// each step draws an allowed token (uniformly, or among the one-byte
// ones half of the time, so that structure is explored as much as
// string content); after o.Steps tokens, or when the walk chooses to
// end where it may, the shortest completion closes the document, which
// the validator must accept.
func walks(ch Chooser, g *gbnf.Grammar, judge *jsonschema.Schema, v Vocab, o Options, st *Stats, fail func(kind, doc, detail string)) {
	cm, err := mask.Compile(g, v.V)
	if err != nil {
		st.MaskLimit++
		return
	}
	words := (v.V.Size() + 31) / 32
	maskBits := make([]uint32, words)
	var allowed, short []int32
	for w := 0; w < o.Walks; w++ {
		m := cm.NewMatcher()
		var doc []byte
		ended := false
		tokens := 0
		for step := 0; step < o.Steps && !ended; step++ {
			m.FillMask(maskBits)
			allowed, short = allowed[:0], short[:0]
			eog := false
			for i, word := range maskBits {
				for word != 0 {
					id := int32(i*32 + bits.TrailingZeros32(word))
					word &= word - 1
					if v.V.IsEOG(id) {
						eog = true
						continue
					}
					allowed = append(allowed, id)
					if len(v.V.Token(id)) == 1 {
						short = append(short, id)
					}
				}
			}
			if eog != m.CanEnd() {
				fail("walk-stuck", string(doc), fmt.Sprintf("%s: end-of-generation allowed = %v but CanEnd = %v", v.Name, eog, m.CanEnd()))
				return
			}
			if len(allowed) == 0 || (eog && ch.Intn(6) == 0) {
				if !eog {
					fail("walk-stuck", string(doc), v.Name+": no token allowed and the document cannot end")
					return
				}
				ended = true
				break
			}
			pool := allowed
			if len(short) > 0 && ch.Intn(2) == 0 {
				pool = short
			}
			tok := pool[ch.Intn(len(pool))]
			if err := m.Accept(tok); err != nil {
				fail("walk-stuck", string(doc), fmt.Sprintf("%s: token %d allowed by the mask but not accepted: %v", v.Name, tok, err))
				return
			}
			doc = append(doc, v.V.Token(tok)...)
			tokens++
		}
		if !ended && !m.CanEnd() {
			tail, ok := m.ShortestCompletion()
			if !ok {
				fail("walk-stuck", string(doc), v.Name+": no shortest completion")
				return
			}
			if err := m.AcceptBytes(tail); err != nil || !m.CanEnd() {
				fail("walk-stuck", string(doc), fmt.Sprintf("%s: the shortest completion %q is not accepted: %v", v.Name, tail, err))
				return
			}
			doc = append(doc, tail...)
		}
		st.Walks++
		st.WalkTokens += tokens
		if err := jsonschema2gbnf.Validate(judge, doc); err != nil {
			fail("walk-invalid", string(doc), v.Name+": "+err.Error())
		}
	}
}

// Mutate returns a near miss of a JSON document: one value replaced, a
// key dropped or added, an item dropped or repeated, a number or string
// nudged. ok is false when the document is not JSON.
func Mutate(ch Chooser, doc []byte) ([]byte, bool) {
	v, err := decodeOrdered(doc)
	if err != nil {
		return nil, false
	}
	i := 0
	v = mutateAt(ch, v, &i, ch.Intn(countValues(v)))
	return []byte(encode(v)), true
}

func countValues(v any) int {
	n := 1
	switch x := v.(type) {
	case *obj:
		for _, k := range x.keys {
			n += countValues(x.vals[k])
		}
	case []any:
		for _, e := range x {
			n += countValues(e)
		}
	}
	return n
}

// mutateAt changes the target-th value (in document order) of v.
func mutateAt(ch Chooser, v any, i *int, target int) any {
	if *i == target {
		*i++
		return mutateValue(ch, v)
	}
	*i++
	switch x := v.(type) {
	case *obj:
		for _, k := range x.keys {
			x.vals[k] = mutateAt(ch, x.vals[k], i, target)
		}
	case []any:
		for j := range x {
			x[j] = mutateAt(ch, x[j], i, target)
		}
	}
	return v
}

func mutateValue(ch Chooser, v any) any {
	switch x := v.(type) {
	case *obj:
		if len(x.keys) > 0 && ch.Intn(2) == 0 {
			k := x.keys[ch.Intn(len(x.keys))]
			delete(x.vals, k)
			for i, kk := range x.keys {
				if kk == k {
					x.keys = append(x.keys[:i], x.keys[i+1:]...)
					break
				}
			}
			return x
		}
		x.set([]string{"a", "b", "c", "", "x", "aa"}[ch.Intn(6)], randomValue(ch, 1, names))
		return x
	case []any:
		switch {
		case len(x) > 0 && ch.Intn(2) == 0:
			i := ch.Intn(len(x))
			return append(append([]any{}, x[:i]...), x[i+1:]...)
		case len(x) > 0:
			return append(append([]any{}, x...), x[ch.Intn(len(x))])
		}
		return []any{randomValue(ch, 1, names)}
	case num:
		return num(numbers[ch.Intn(len(numbers))])
	case string:
		if x != "" && ch.Intn(2) == 0 {
			return x[:len(x)-1]
		}
		return x + strs[ch.Intn(len(strs))]
	}
	return randomValue(ch, 1, names)
}

// decodeOrdered decodes JSON keeping key order, numbers as num.
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := newObj()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(kt.(string), val)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			arr := []any{}
			for dec.More() {
				val, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, val)
			}
			_, err := dec.Token()
			return arr, err
		}
	case json.Number:
		return num(t), nil
	}
	return tok, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Summary formats the stats as the report's lines.
func (s *Stats) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schemas %d, converted (strict) %d\n", s.Schemas, s.Converted)
	fmt.Fprintf(&b, "schema × instance pairs %d (valid %d, invalid %d); valid instances the grammar rejects once formatted: %d\n", s.Pairs, s.Valid, s.Pairs-s.Valid, s.Rejected)
	fmt.Fprintf(&b, "grammar sentences validated %d; walks decoded and validated %d (%d tokens); grammars over a mask limit %d\n", s.Sentences, s.Walks, s.WalkTokens, s.MaskLimit)
	fmt.Fprintf(&b, "failures %d\n", len(s.Failures))
	type kv struct {
		k string
		v int
	}
	var us []kv
	for k, v := range s.Unsupported {
		us = append(us, kv{k, v})
	}
	sort.Slice(us, func(i, j int) bool { return us[i].v > us[j].v || (us[i].v == us[j].v && us[i].k < us[j].k) })
	b.WriteString("strict mode rejects (schemas, by keyword):")
	for _, x := range us {
		fmt.Fprintf(&b, " %s %d;", x.k, x.v)
	}
	b.WriteString("\nother conversion errors:")
	var es []kv
	for k, v := range s.Errors {
		es = append(es, kv{k, v})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].v > es[j].v || (es[i].v == es[j].v && es[i].k < es[j].k) })
	for _, x := range es {
		fmt.Fprintf(&b, " %s %d;", x.k, x.v)
	}
	b.WriteString("\n")
	return b.String()
}
