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

type Sized struct {
	I8   int8              `json:"i8"`
	U8   uint8             `json:"u8"`
	I16  int16             `json:"i16" jsonschema:"minimum=-100000"` // wider than the type: narrowed
	U16  uint16            `json:"u16" jsonschema:"maximum=9"`       // narrower: kept
	I32  int32             `json:"i32"`
	U32  uint32            `json:"u32"`
	I64  int64             `json:"i64"`
	U64  uint64            `json:"u64"`
	U    uint              `json:"u"`
	F32  float32           `json:"f32"`
	F64  float64           `json:"f64"`
	List [2]uint8          `json:"list"`
	Blob []byte            `json:"blob" jsonschema:"maxLength=12"`
	Map  map[string]uint16 `json:"map" jsonschema:"maxProperties=2"`
	Next *Sized            `json:"next,omitempty"`
}

// Sized numbers get the bounds of their Go type, so generated values
// always unmarshal (without them a uint8 field failed about one
// generation in four with "cannot unmarshal number 841").
func TestSchemaForSizedNumbers(t *testing.T) {
	b, err := structgen.SchemaFor[Sized]()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"i8":{"type":"integer","maximum":127,"minimum":-128}`,
		`"u8":{"type":"integer","maximum":255,"minimum":0}`,
		`"i16":{"type":"integer","maximum":32767,"minimum":-32768}`,
		`"u16":{"type":"integer","maximum":9,"minimum":0}`,
		`"i64":{"type":"integer","maximum":9223372036854775807,"minimum":-9223372036854775808}`,
		`"u64":{"type":"integer","maximum":18446744073709551615,"minimum":0}`,
		`"f32":{"type":"number","maximum":3.4028234663852886e38,"minimum":-3.4028234663852886e38}`,
		`"f64":{"type":"number","maximum":1.7976931348623157e308,"minimum":-1.7976931348623157e308}`,
		`"list":{"items":{"type":"integer","maximum":255,"minimum":0}`,
		`"blob":{"type":"string","maxLength":12,"pattern":"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$","contentEncoding":"base64"}`,
		`"map":{"additionalProperties":{"type":"integer","maximum":65535,"minimum":0}`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema lacks %s:\n%s", want, b)
		}
	}
	if b, _ := structgen.SchemaFor[uint16](); !strings.Contains(string(b), `"maximum":65535,"minimum":0`) {
		t.Errorf("SchemaFor[uint16]: %s", b)
	}
	eng, err := engine.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for seed := range uint32(300) {
		if _, err := structgen.Generate[Sized](context.Background(), eng, "", engine.WithSeed(seed)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
