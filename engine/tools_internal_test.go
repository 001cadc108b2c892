package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/structgen/structgen/internal/llama3vocab"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/mask"
)

// bfclTools reads n realistic tools: the function schemas of the
// JSONSchemaBench BFCL sets (Gorilla's Berkeley Function Calling
// Leaderboard), each {"type":"object","properties":{NAME: PARAMETERS}}.
func bfclTools(tb testing.TB, n int) []Tool {
	tb.Helper()
	root := sharedtest.Path(tb, "corpus", "jsonschemabench")
	var tools []Tool
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
			}
		}
	}
	if len(tools) < n {
		tb.Fatalf("%d BFCL tools, want %d", len(tools), n)
	}
	return tools
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
