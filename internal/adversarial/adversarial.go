// Package adversarial runs the adversarial regression suite,
// testdata/adversarial/*.txtar: inputs built to exhaust time or memory
// (schemas whose grammar explodes, grammars whose automaton or matcher
// configurations grow without bound, documents the validator library is
// slow on), each with the outcome it must have — success within a stated
// amount of memory, or a specific limit error. The test in this package
// runs every case; the numbers it logs (-v) are the suite's measurements.
//
// # File format
//
// Each case is a txtar archive. Its leading text describes the case. The
// input is one of the files
//
//	schema.json   a JSON Schema (converted with jsonschema2gbnf)
//	grammar.gbnf  a GBNF grammar
//	gen           one line "NAME key=value ...": a generated schema or
//	              grammar (see Generate), for inputs too large to check in
//
// and the file spec holds "key: value" lines:
//
//	run:   compile | check | generate | walk (default compile)
//	vocab: bytes | llama3 (compile, check, walk; default bytes: the 256
//	       single bytes and an end token; llama3 needs ../shared)
//	input: for check, a generated document "NAME key=value ..." (see
//	       Generate) or a file of the archive named "input"
//	n:     generate: the byte budget; walk: the most mask steps
//	seed:  generate, walk: the random seed (default 1)
//	noend: true: walk never draws an end-of-generation token
//	maskevery: N: check fills the mask after every N bytes (and fails
//	       with the matcher's limit error, if any)
//	lenient: true to convert the schema in lenient mode
//	want:  ok, or "error TEXT": the run must fail with an error whose
//	       text contains TEXT (typically the name of the limit)
//	alloc: the most bytes the run may allocate in total (runtime.MemStats
//	       TotalAlloc), e.g. 64MB
//	heap:  the most live heap the run may reach above the heap before it
//	       (sampled HeapAlloc), e.g. 32MB
//	short: skip — skipped with go test -short
//
// check feeds the document to a matcher with AcceptBytes and then asks
// that it can end; generate runs the no-model engine (as `structgen
// --max-bytes n` does, validation included); walk fills the mask and
// accepts a uniformly drawn allowed token, n times or until the end.
package adversarial

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// Case is one adversarial input and its expected outcome.
type Case struct {
	Name    string
	File    string
	Comment string
	Schema  []byte // one of Schema and Grammar is set
	Grammar string
	Input   []byte // check: the document
	Mode    string // run: compile, check, generate or walk
	Vocab   string
	N       int
	Seed    uint64
	Lenient bool
	NoEnd   bool   // walk: never draw an end-of-generation token
	MaskN   int    // check: fill the mask every MaskN bytes (0: never)
	WantErr string // "" for success
	Alloc   uint64 // bound on TotalAlloc (0: none)
	Heap    uint64 // bound on the sampled live heap (0: none)
	Short   bool   // skipped in -short
}

// Load loads every *.txtar file of dir, in name order.
func Load(dir string) ([]*Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil {
		return nil, err
	}
	var out []*Case
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		c, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Parse parses one case; file names it in errors.
func Parse(file string, data []byte) (*Case, error) {
	ar := txtar.Parse(data)
	c := &Case{Name: strings.TrimSuffix(filepath.Base(file), ".txtar"), File: file, Comment: strings.TrimSpace(string(ar.Comment)), Mode: "compile", Vocab: "bytes", Seed: 1}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", file, fmt.Sprintf(format, args...))
	}
	files := map[string][]byte{}
	for _, f := range ar.Files {
		files[f.Name] = f.Data
	}
	switch {
	case files["schema.json"] != nil:
		c.Schema = files["schema.json"]
	case files["grammar.gbnf"] != nil:
		c.Grammar = string(files["grammar.gbnf"])
	case files["gen"] != nil:
		kind, text, err := Generate(strings.TrimSpace(string(files["gen"])))
		if err != nil {
			return nil, errf("gen: %v", err)
		}
		if kind == "schema" {
			c.Schema = text
		} else {
			c.Grammar = string(text)
		}
	default:
		return nil, errf("no schema.json, grammar.gbnf or gen")
	}
	for i, line := range strings.Split(string(files["spec"]), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, errf("spec line %d: want key: value", i+1)
		}
		v = strings.TrimSpace(v)
		var err error
		switch strings.TrimSpace(k) {
		case "run":
			c.Mode = v
		case "vocab":
			c.Vocab = v
		case "input":
			if v == "input" {
				c.Input = bytes.TrimSuffix(files["input"], []byte("\n"))
			} else {
				_, c.Input, err = Generate(v)
			}
		case "n":
			c.N, err = strconv.Atoi(v)
		case "seed":
			c.Seed, err = strconv.ParseUint(v, 10, 64)
		case "lenient":
			c.Lenient = v == "true"
		case "noend":
			c.NoEnd = v == "true"
		case "maskevery":
			c.MaskN, err = strconv.Atoi(v)
		case "want":
			if v != "ok" {
				var found bool
				c.WantErr, found = strings.CutPrefix(v, "error ")
				if !found || c.WantErr == "" {
					err = fmt.Errorf("want ok or error TEXT")
				}
			}
		case "alloc":
			c.Alloc, err = parseBytes(v)
		case "heap":
			c.Heap, err = parseBytes(v)
		case "short":
			c.Short = v == "skip"
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return nil, errf("spec line %d: %v", i+1, err)
		}
	}
	switch c.Mode {
	case "compile", "check", "generate", "walk":
	default:
		return nil, errf("unknown run %q", c.Mode)
	}
	if c.Mode == "check" && c.Input == nil {
		return nil, errf("run: check needs an input")
	}
	return c, nil
}

func parseBytes(s string) (uint64, error) {
	mult := uint64(1)
	for suf, m := range map[string]uint64{"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30} {
		if t, ok := strings.CutSuffix(s, suf); ok {
			s, mult = t, m
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n * mult, err
}

// Generate builds a generated input from its description "NAME
// key=value ...". It returns the kind ("schema", "grammar" or "input")
// and the text. The generators:
//
//	counted props=N [min=A] [max=B] [type=T]: an object schema with N
//	  optional properties p0… of type T (integer), additionalProperties
//	  false, minProperties A and maxProperties B when given
//	emptyprops n=N [per=K] [draft=7] [only2020=1]: an object schema with
//	  N empty property schemas, in objects of K properties under one root
//	  when per is given; draft=7 names draft-07 in $schema; only2020=1
//	  adds a root $dynamicAnchor, a keyword draft 2019-09 reads
//	  differently, so that a document without $schema is compiled under
//	  draft 2020-12's rules
//	chain n=N: the grammar root ::= r0, rI ::= "a" r(I+1) "b", rN ::= "c"
//	wide n=N: the grammar root ::= r0 | … | r(N-1), rI ::= "kI"
//	numbers n=N literal=L: the schema {"enum":[L, L, …]} with N values
//	chaininput n=N: the sentence of chain n=N
//	repeat text=S n=N: S repeated N times (an input)
func Generate(desc string) (kind string, text []byte, err error) {
	fields := strings.Fields(desc)
	if len(fields) == 0 {
		return "", nil, fmt.Errorf("empty generator")
	}
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return "", nil, fmt.Errorf("%s: argument %q is not key=value", fields[0], f)
		}
		args[k] = v
	}
	num := func(k string, def int) int {
		if err != nil {
			return 0
		}
		v, ok := args[k]
		if !ok {
			return def
		}
		var n int
		n, err = strconv.Atoi(v)
		return n
	}
	var b bytes.Buffer
	switch fields[0] {
	case "counted":
		n, lo, hi := num("props", 0), num("min", -1), num("max", -1)
		typ := args["type"]
		if typ == "" {
			typ = "integer"
		}
		b.WriteString(`{"type":"object","properties":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"p%d":{"type":%q}`, i, typ)
		}
		b.WriteString(`},"additionalProperties":false`)
		if lo >= 0 {
			fmt.Fprintf(&b, `,"minProperties":%d`, lo)
		}
		if hi >= 0 {
			fmt.Fprintf(&b, `,"maxProperties":%d`, hi)
		}
		b.WriteString("}")
		return "schema", b.Bytes(), err
	case "emptyprops":
		n, per := num("props", num("n", 0)), num("per", 0)
		b.WriteString(`{`)
		if args["draft"] == "7" {
			b.WriteString(`"$schema":"http://json-schema.org/draft-07/schema#",`)
		}
		if args["only2020"] == "1" {
			b.WriteString(`"$dynamicAnchor":"root",`)
		}
		b.WriteString(`"type":"object","properties":{`)
		if per <= 0 {
			for i := range n {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"p%d":{}`, i)
			}
		} else {
			for o := 0; o*per < n; o++ {
				if o > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"o%d":{"type":"object","properties":{`, o)
				for i := 0; i < per && o*per+i < n; i++ {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `"p%d":{}`, i)
				}
				b.WriteString("}}")
			}
		}
		b.WriteString("}}")
		return "schema", b.Bytes(), err
	case "chain":
		n := num("n", 0)
		b.WriteString("root ::= r0\n")
		for i := range n {
			fmt.Fprintf(&b, "r%d ::= \"a\" r%d \"b\"\n", i, i+1)
		}
		fmt.Fprintf(&b, "r%d ::= \"c\"\n", n)
		return "grammar", b.Bytes(), err
	case "wide":
		n := num("n", 0)
		b.WriteString("root ::= r0")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, " | r%d", i)
		}
		b.WriteString("\n")
		for i := range n {
			fmt.Fprintf(&b, "r%d ::= \"k%d\"\n", i, i)
		}
		return "grammar", b.Bytes(), err
	case "numbers":
		n := num("n", 0)
		b.WriteString(`{"enum":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(args["literal"])
		}
		b.WriteString("]}")
		return "schema", b.Bytes(), err
	case "chaininput":
		n := num("n", 0)
		return "input", []byte(strings.Repeat("a", n) + "c" + strings.Repeat("b", n)), err
	case "repeat":
		return "input", []byte(strings.Repeat(args["text"], num("n", 0))), err
	}
	return "", nil, fmt.Errorf("unknown generator %q", fields[0])
}

// Run runs the case with vocabulary v (nil for run: generate, which uses
// the no-model engine's). It returns the error of the run, nil on
// success; a run that does not fail but breaks the case's contract in
// another way (a check document that does not end) is an error too.
func (c *Case) Run(ctx context.Context, v *mask.Vocab) error {
	if c.Mode == "generate" {
		opts := []engine.Option{engine.WithMaxBytes(c.N), engine.WithSeed(uint32(c.Seed)), engine.WithLenient(c.Lenient)}
		if c.Schema != nil {
			opts = append(opts, engine.WithSchema(c.Schema))
		} else {
			opts = append(opts, engine.WithGrammar(c.Grammar))
		}
		e, err := engine.New(nil, opts...)
		if err != nil {
			return err
		}
		res, err := e.Generate(ctx, "")
		if err != nil {
			return err
		}
		if c.Schema != nil && !json.Valid([]byte(res.Output)) {
			return fmt.Errorf("generated output is not JSON: %.80q", res.Output)
		}
		return nil
	}
	src := c.Grammar
	if c.Schema != nil {
		var opts []jsonschema2gbnf.Option
		if c.Lenient {
			opts = append(opts, jsonschema2gbnf.Lenient(nil))
		}
		var err error
		if src, err = jsonschema2gbnf.Convert(c.Schema, opts...); err != nil {
			return err
		}
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		return err
	}
	cm, err := mask.Compile(g, v)
	if err != nil {
		return err
	}
	m := cm.NewMatcher()
	switch c.Mode {
	case "check":
		step := len(c.Input)
		if c.MaskN > 0 {
			step = c.MaskN
		}
		words := make([]uint32, cm.Words())
		for i := 0; i < len(c.Input); i += step {
			if err := m.AcceptBytes(c.Input[i:min(i+step, len(c.Input))]); err != nil {
				return err
			}
			if c.MaskN > 0 {
				m.FillMask(words)
				if err := m.Err(); err != nil {
					return err
				}
			}
		}
		if !m.CanEnd() {
			return fmt.Errorf("the input is a prefix, not a sentence, of the grammar")
		}
	case "walk":
		rng := rand.New(rand.NewPCG(c.Seed, 15))
		words := make([]uint32, cm.Words())
		var allowed []int32
		for range c.N {
			m.FillMask(words)
			if err := m.Err(); err != nil {
				return err
			}
			allowed = allowed[:0]
			for i, w := range words {
				for w != 0 {
					if tok := int32(i*32 + bits.TrailingZeros32(w)); !c.NoEnd || !v.IsEOG(tok) {
						allowed = append(allowed, tok)
					}
					w &= w - 1
				}
			}
			if len(allowed) == 0 {
				return fmt.Errorf("a dead end after %d tokens", m.Tokens())
			}
			if err := m.Accept(allowed[rng.IntN(len(allowed))]); err != nil {
				return err
			}
			if m.Ended() {
				break
			}
		}
	}
	return nil
}
