package engine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask"
)

// bfclTools reads n realistic tools: the function schemas of the
// JSONSchemaBench BFCL sets (Gorilla's Berkeley Function Calling
// Leaderboard), each {"type":"object","properties":{NAME: PARAMETERS}}.
func bfclTools(tb testing.TB, n int) []Tool {
	tools, _ := bfclCorpus(tb, n)
	return tools
}

// bfclCorpus is bfclTools, and for the tools that have one the arguments
// of a valid call in the same corpus file (BFCL's ground truth).
func bfclCorpus(tb testing.TB, n int) ([]Tool, map[string]json.RawMessage) {
	tb.Helper()
	root := sharedtest.Path(tb, "corpus", "jsonschemabench")
	var tools []Tool
	calls := map[string]json.RawMessage{}
	seen := map[string]bool{}
	for _, set := range []string{"BFCL_simple", "BFCL_multiple", "BFCL_parallel", "BFCL_parallel_multiple"} {
		files, err := filepath.Glob(filepath.Join(root, set, "*.json"))
		if err != nil {
			tb.Fatal(err)
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			var doc struct {
				Schema struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"schema"`
				Tests []struct {
					Valid bool                       `json:"valid"`
					Data  map[string]json.RawMessage `json:"data"`
				} `json:"tests"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			names := make([]string, 0, len(doc.Schema.Properties))
			for name := range doc.Schema.Properties {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if seen[name] || len(tools) == n {
					continue
				}
				seen[name] = true
				tools = append(tools, Tool{Name: name, Description: "BFCL function " + name, Parameters: doc.Schema.Properties[name]})
				for _, tc := range doc.Tests {
					if args := tc.Data[name]; tc.Valid && args != nil && calls[name] == nil {
						calls[name] = args
					}
				}
			}
		}
	}
	if len(tools) < n {
		tb.Fatalf("%d BFCL tools, want %d", len(tools), n)
	}
	return tools, calls
}

// llama3Engine is an engine with the Llama-3 vocabulary (no model: tool
// constraints only need the vocabulary).
func llama3Engine(tb testing.TB) *Engine {
	tb.Helper()
	v, err := llama3vocab.Load(sharedtest.Dir(tb))
	if err != nil {
		tb.Fatal(err)
	}
	mask.PrepareVocab(v)
	return &Engine{vocab: v}
}

// 128 realistic tools become one grammar: every call a generation of it
// can make parses into a valid call of one of the tools.
func TestTools128(t *testing.T) {
	e := llama3Engine(t)
	tools := bfclTools(t, 128)
	for _, tf := range []toolFormat{toolHermes, toolLlama3} {
		ts := &toolSpec{tools: tools, format: tf, mode: ToolRequired}
		start := time.Now()
		con, err := e.buildTools(ts, nil)
		if err != nil {
			t.Fatalf("%s: %v", tf, err)
		}
		st := con.compiled.Stats()
		t.Logf("%s: 128 tools: %v (grammar %d bytes, %d states, %d of %d tops eager)", tf, time.Since(start), len(con.src), st.States, st.EagerStates, st.TopStates)
		// The grammar accepts a call of each tool written as models write
		// them, and the parser reads it back.
		for _, name := range []string{tools[0].Name, tools[77].Name, tools[127].Name} {
			var call string
			switch tf {
			case toolLlama3:
				call = fmt.Sprintf(`{"name": %q, "parameters": `, name)
			default:
				call = fmt.Sprintf("<tool_call>\n{\"name\": %q, \"arguments\": ", name)
			}
			m := con.compiled.NewMatcher()
			if err := m.AcceptBytes([]byte(call)); err != nil {
				t.Errorf("%s: the grammar rejects the start of a call of %s: %v", tf, name, err)
			}
		}
	}
}

// The merged grammar of the tools (each tool's parameters converted on
// its own) accepts exactly what converting the anyOf of the call objects
// in one schema accepts: compared on a valid call of each tool and on
// near-misses of them (bytes deleted, inserted, names swapped), and each
// accepted call parses into a call its tool's validator accepts.
func TestToolGrammarDifferential(t *testing.T) {
	e := llama3Engine(t)
	tools, calls := bfclCorpus(t, 128)
	ts := &toolSpec{tools: tools, format: toolLlama3, mode: ToolRequired}
	con, err := e.buildTools(ts, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: one schema, {"name": const, "parameters": schema}
	// anyOf over the tools.
	var branches []string
	for _, tl := range tools {
		name, _ := json.Marshal(tl.Name)
		branches = append(branches, fmt.Sprintf(`{"type":"object","properties":{"name":{"const":%s},"parameters":%s},"required":["name","parameters"],"additionalProperties":false}`, name, tl.Parameters))
	}
	schema := []byte(`{"anyOf":[` + strings.Join(branches, ",") + `]}`)
	src, validator, err := jsonschema2gbnf.ConvertAndCompile(schema, jsonschema2gbnf.FlexibleWhitespace(0))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gbnf.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := mask.CompileWith(g, e.vocab, mask.Options{})
	if err != nil {
		t.Fatal(err)
	}
	accepts := func(c *mask.Compiled, s string) bool {
		m := c.NewMatcher()
		return m.AcceptBytes([]byte(s)) == nil && m.CanEnd()
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var checked, accepted int
	for i, tl := range tools {
		args, ok := calls[tl.Name]
		if !ok {
			continue
		}
		formatted, err := jsonschema2gbnf.Format(tl.Parameters, args, jsonschema2gbnf.FlexibleWhitespace(0))
		if err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		call := fmt.Sprintf(`{"name": %q, "parameters": %s}`, tl.Name, formatted)
		other := tools[(i+1)%len(tools)].Name
		cands := []string{call, strings.Replace(call, fmt.Sprintf("%q", tl.Name), fmt.Sprintf("%q", other), 1)}
		for range 30 {
			b := []byte(call)
			k := rng.IntN(len(b))
			if rng.IntN(2) == 0 {
				b = append(b[:k:k], b[k+1:]...)
			} else {
				b = append(b[:k:k], append([]byte{call[rng.IntN(len(call))]}, b[k:]...)...)
			}
			cands = append(cands, string(b))
		}
		for j, s := range cands {
			got, want := accepts(con.compiled, s), accepts(ref, s)
			checked++
			if got != want {
				t.Errorf("%s: merged grammar accepts %v, one-schema grammar %v: %q", tl.Name, got, want, s)
				continue
			}
			if j == 0 && !got {
				t.Errorf("%s: the grammars reject a valid call: %q", tl.Name, s)
			}
			if !got {
				continue
			}
			accepted++
			if _, err := con.tools.parse(s, 1); err != nil {
				t.Errorf("%s: accepted %q, but: %v", tl.Name, s, err)
			}
			if err := validate(validator, s); err != nil {
				t.Errorf("%s: accepted %q, which the one schema rejects: %v", tl.Name, s, err)
			}
		}
	}
	if checked < 100*32 {
		t.Fatalf("only %d strings compared", checked)
	}
	t.Logf("%d strings compared, %d accepted by both", checked, accepted)
}
