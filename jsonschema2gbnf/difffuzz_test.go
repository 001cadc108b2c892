package jsonschema2gbnf_test

import (
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf/internal/difffuzz"
)

var (
	writeSeeds = flag.Int("difffuzz.seeds", 0, "rewrite testdata/fuzz/FuzzDifferential with this many seed inputs that cover the grammar of schemas")
	fuzzWalks  = flag.Bool("difffuzz.walks", false, "with -fuzz: also walk through the mask (two compiles against 128k-token vocabularies per input: about a second each under coverage instrumentation)")
)

// diffOptions is what one fuzz input exercises: a few dozen instances,
// four sentences with their mutations, and one walk per vocabulary.
var diffOptions = difffuzz.Options{Instances: 16, Sentences: 4, MaxBytes: 300, Walks: 1, Steps: 64, Lenient: true}

var (
	diffVocabsOnce sync.Once
	diffVocabs     []difffuzz.Vocab
	diffVocabsWhy  string
)

// walkVocabs loads Llama-3 and Qwen2 once (none without ../shared).
func walkVocabs(t testing.TB) []difffuzz.Vocab {
	diffVocabsOnce.Do(func() {
		shared, why := sharedtest.Find()
		if shared == "" {
			diffVocabsWhy = why
			return
		}
		for _, name := range []string{"llama3", "qwen2"} {
			v, err := difffuzz.LoadVocab(shared, name)
			if err != nil {
				diffVocabsWhy = err.Error()
				diffVocabs = nil
				return
			}
			diffVocabs = append(diffVocabs, v)
		}
	})
	if diffVocabs == nil {
		t.Logf("no walks through the mask: %s", diffVocabsWhy)
	}
	return diffVocabs
}

// FuzzDifferential is the differential fuzzer (internal/difffuzz) as a
// Go fuzz target: the input is the stream of choices of the grammar of
// schemas and of the instances. A document the strict grammar accepts
// and the validator rejects, a sentence of the grammar or a walk through
// the mask (Llama-3, Qwen2) that the validator rejects, a panic, or a
// grammar that does not parse is a failure. `go test` runs the seed
// corpus (testdata/fuzz/FuzzDifferential), walks included; fuzz with
//
//	go test -run '^$' -fuzz FuzzDifferential ./jsonschema2gbnf
//
// (walks only with -args -difffuzz.walks: they cost about a second per
// input under coverage instrumentation), and run many more schemas, with
// walks, with cmd/schemafuzz.
func FuzzDifferential(f *testing.F) {
	if *writeSeeds > 0 {
		if err := writeSeedCorpus(*writeSeeds); err != nil {
			f.Fatal(err)
		}
	}
	o := diffOptions
	if fuzzing := flag.Lookup("test.fuzz"); fuzzing == nil || fuzzing.Value.String() == "" || *fuzzWalks {
		o.Vocabs = walkVocabs(f)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ch := difffuzz.NewBytes(in)
		schema := difffuzz.Schema(ch)
		for _, fl := range difffuzz.Check(ch, schema, o, difffuzz.NewStats()) {
			t.Errorf("%s", fl)
		}
	})
}

// writeSeedCorpus writes n inputs to testdata/fuzz/FuzzDifferential:
// random byte strings, each kept when its schema converts and uses a
// keyword the kept ones use least (greedy cover of the grammar).
func writeSeedCorpus(n int) error {
	dir := filepath.Join("testdata", "fuzz", "FuzzDifferential")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(1))
	uses := map[string]int{}
	keywords := func(schema string) []string {
		var ks []string
		for _, k := range []string{"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$dynamicAnchor", "$recursiveRef",
			"allOf", "anyOf", "oneOf", "\"not\"", "\"if\"", "dependentSchemas", "dependentRequired", "dependencies",
			"prefixItems", "contains", "minContains", "patternProperties", "propertyNames", "additionalProperties",
			"\"required\"", "\"properties\"", "\"$ref\"", "multipleOf", "minimum", "format", "pattern", "enum", "const",
			"2019-09", "draft-07", "minProperties", "maxProperties", "minItems", "maxItems", "minLength"} {
			if strings.Contains(schema, k) {
				ks = append(ks, k)
			}
		}
		return ks
	}
	for written, tries := 0, 0; written < n && tries < 100*n; tries++ {
		in := make([]byte, 64+rng.Intn(400))
		rng.Read(in)
		ch := difffuzz.NewBytes(in)
		schema := string(difffuzz.Schema(ch))
		st := difffuzz.NewStats()
		difffuzz.Check(ch, []byte(schema), difffuzz.Options{Instances: 1}, st)
		if st.Converted == 0 {
			continue
		}
		ks := keywords(schema)
		if len(ks) == 0 {
			continue
		}
		sort.Slice(ks, func(i, j int) bool { return uses[ks[i]] < uses[ks[j]] })
		if uses[ks[0]] > written/8 {
			continue // adds nothing the kept inputs lack
		}
		for _, k := range ks {
			uses[k]++
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%03d", written)), []byte(body), 0o644); err != nil {
			return err
		}
		written++
	}
	return nil
}
