package structgen_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/structgen/structgen"
	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

type Node struct {
	Name     string  `json:"name" jsonschema:"minLength=1,maxLength=8"`
	Children []*Node `json:"children,omitempty" jsonschema:"maxItems=2"`
}

type Event struct {
	Zeta  string    `json:"zeta" jsonschema:"description=comes first"`
	Alpha int       `json:"alpha" jsonschema:"minimum=-5,maximum=5"`
	When  time.Time `json:"when"`
	Kind  string    `json:"kind" jsonschema:"enum=a,enum=b"`
	Extra *string   `json:"extra,omitempty"`
	Tags  []string  `json:"tags,omitempty" jsonschema:"maxItems=2"`
}

// The schema keeps field order, tags and required fields, and converts.
func TestSchemaFor(t *testing.T) {
	b, err := structgen.SchemaFor[Event]()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	order := []string{`"zeta"`, `"alpha"`, `"when"`, `"kind"`, `"extra"`, `"tags"`}
	last := -1
	for _, k := range order {
		i := strings.Index(s, k)
		if i < last {
			t.Errorf("property %s out of struct order in %s", k, s)
		}
		last = i
	}
	for _, want := range []string{`"description":"comes first"`, `"enum":["a","b"]`, `"minimum":-5`, `"maximum":5`, `"format":"date-time"`, `"required":["zeta","alpha","when","kind"]`, `"additionalProperties":false`} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %s: %s", want, s)
		}
	}
	for name, get := range map[string]func() ([]byte, error){
		"Event":    structgen.SchemaFor[Event],
		"Node":     structgen.SchemaFor[Node],
		"[]string": structgen.SchemaFor[[]string],
		"int":      structgen.SchemaFor[int],
		"map":      structgen.SchemaFor[map[string]Item],
	} {
		b, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := jsonschema2gbnf.Convert(b); err != nil {
			t.Errorf("%s: %s does not convert: %v", name, b, err)
		}
	}
	if _, err := structgen.SchemaFor[any](); err == nil {
		t.Error("SchemaFor[any] gave a schema")
	}
	again, _ := structgen.SchemaFor[Event]()
	if string(again) != s {
		t.Error("SchemaFor is not stable")
	}
}

// Without a model, Generate gives valid values of every shape, recursive
// ones included, reproducibly for a seed.
func TestGenerateNoModel(t *testing.T) {
	eng, err := engine.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kinds := map[string]int{}
	for seed := range uint32(100) {
		ev, err := structgen.Generate[Event](ctx, eng, "", engine.WithSeed(seed))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if ev.Alpha < -5 || ev.Alpha > 5 || (ev.Kind != "a" && ev.Kind != "b") || len(ev.Tags) > 2 || ev.When.IsZero() && ev.When.Year() != 1 {
			t.Fatalf("seed %d: %+v", seed, ev)
		}
		kinds[ev.Kind]++
		again, err := structgen.Generate[Event](ctx, eng, "", engine.WithSeed(seed))
		if err != nil || !again.When.Equal(ev.When) || again.Zeta != ev.Zeta {
			t.Fatalf("seed %d not reproducible: %+v then %+v", seed, ev, again)
		}
	}
	if kinds["a"] < 20 || kinds["b"] < 20 {
		t.Errorf("enum values drawn %v", kinds)
	}
	deep := 0
	for seed := range uint32(100) {
		n, err := structgen.Generate[Node](ctx, eng, "", engine.WithSeed(seed))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if n.Name == "" || len(n.Name) > 8*4 {
			t.Errorf("seed %d: name %q", seed, n.Name)
		}
		if len(n.Children) > 0 && len(n.Children[0].Children) > 0 {
			deep++
		}
	}
	if deep == 0 {
		t.Error("no tree deeper than 2 levels in 100")
	}
	// A grammar in opts is replaced by T's schema.
	if _, err := structgen.Generate[Item](ctx, eng, "", engine.WithGrammar(`root ::= "x"`), engine.WithSeed(1)); err != nil {
		t.Errorf("grammar option not replaced: %v", err)
	}
	// A prompt without a model is an error, as in the engine.
	if _, err := structgen.Generate[Item](ctx, eng, "a prompt"); err == nil {
		t.Error("no-model Generate accepted a prompt")
	}
}

func TestOutputUnmarshalled(t *testing.T) {
	eng, err := engine.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint32(50) {
		o, err := structgen.Generate[Order](context.Background(), eng, "", engine.WithSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(o)
		schema, _ := structgen.SchemaFor[Order]()
		v, err := jsonschema2gbnf.CompileSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		_ = json.Unmarshal(b, &doc)
		if err := v.Validate(doc); err != nil {
			t.Fatalf("seed %d: re-marshalled %s: %v", seed, b, err)
		}
	}
}
