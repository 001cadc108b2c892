package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/structgen/structgen/engine"
	"github.com/structgen/structgen/jsonschema2gbnf"
	"github.com/structgen/structgen/mask/jsonkeys"
	"github.com/structgen/structgen/sampling/cpu"
)

const personSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "status": {"enum": ["pending", "paid", "shipped"]},
    "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}
  },
  "required": ["name", "age", "status"],
  "additionalProperties": false
}`

func newEngine(t *testing.T, f *fakeModel, opts ...engine.Option) *engine.Engine {
	t.Helper()
	e, err := engine.New(f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func generate(t *testing.T, e *engine.Engine, prompt string, opts ...engine.Option) *engine.Result {
	t.Helper()
	res, err := e.Generate(context.Background(), prompt, opts...)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkResult(t, res)
	return res
}

// checkResult checks the invariants of every result: the tokens spell the
// text, the counts add up.
func checkResult(t *testing.T, res *engine.Result) {
	t.Helper()
	s := res.Stats
	if s.Tokens != len(res.Tokens) {
		t.Errorf("Stats.Tokens = %d, len(Tokens) = %d", s.Tokens, len(res.Tokens))
	}
	eog := 0
	if res.Stop == engine.StopEOG {
		eog = 1
	}
	if got := s.Sampled - eog + s.Forced + s.CloseOut; got != s.Tokens {
		t.Errorf("sampled %d - eog %d + forced %d + close-out %d = %d, want %d tokens", s.Sampled, eog, s.Forced, s.CloseOut, got, s.Tokens)
	}
	if !strings.HasSuffix(res.Text, res.Output) {
		t.Errorf("Output %q is not the end of Text %q", res.Output, res.Text)
	}
}

// decodeJSON decodes a document whose numbers may exceed float64 (valid
// JSON: the grammar does not bound them).
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the document")
	}
	return v, nil
}

func spell(f *fakeModel, toks []int32) string {
	var b []byte
	for _, t := range toks {
		b = append(b, f.toks[t]...)
	}
	return string(b)
}

var greedy = cpu.Params{Temperature: 0}

func TestScriptUnconstrained(t *testing.T) {
	f := newFakeModel()
	f.script = []byte("Hello world! the cat sat")
	e := newEngine(t, f, engine.WithSampling(greedy))
	res := generate(t, e, "Say hello")
	if res.Text != string(f.script) || res.Stop != engine.StopEOG {
		t.Fatalf("got %q stop %s, want %q stop eog", res.Text, res.Stop, f.script)
	}
	if spell(f, res.Tokens) != res.Text {
		t.Errorf("tokens spell %q", spell(f, res.Tokens))
	}
	if res.Stats.Gumbel != res.Stats.Sampled || res.Stats.Constrained != 0 {
		t.Errorf("unconstrained: gumbel %d constrained %d of %d sampled", res.Stats.Gumbel, res.Stats.Constrained, res.Stats.Sampled)
	}
	// With Gumbel off the CPU chain draws the same greedy tokens.
	res2 := generate(t, e, "Say hello", engine.WithGumbel(false))
	if res2.Text != res.Text || res2.Stats.Gumbel != 0 {
		t.Errorf("chain: %q (gumbel %d)", res2.Text, res2.Stats.Gumbel)
	}
}

func TestSchemaValidEverySeed(t *testing.T) {
	f := newFakeModel()
	e := newEngine(t, f, engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(80))
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := range uint32(30) {
		res := generate(t, e, "A person:", engine.WithSeed(seed))
		doc, err := decodeJSON(res.Output)
		if err != nil {
			t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
		}
		if err := v.Validate(doc); err != nil {
			t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
		}
		if len(res.Tokens) > 80 {
			t.Errorf("seed %d: %d tokens, budget 80", seed, len(res.Tokens))
		}
		if spell(f, res.Tokens) != res.Text {
			t.Errorf("seed %d: tokens spell %q, text %q", seed, spell(f, res.Tokens), res.Text)
		}
		seen[res.Output] = true
		again := generate(t, e, "A person:", engine.WithSeed(seed))
		if again.Output != res.Output {
			t.Errorf("seed %d not reproducible: %q then %q", seed, res.Output, again.Output)
		}
	}
	if len(seen) < 20 {
		t.Errorf("only %d distinct outputs of 30 seeds", len(seen))
	}
}

func TestStream(t *testing.T) {
	f := newFakeModel()
	e := newEngine(t, f, engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(60))
	var buf bytes.Buffer
	pieces := 0
	res := generate(t, e, "x", engine.WithSeed(3), engine.WithStream(func(p []byte) error {
		pieces++
		buf.Write(p)
		return nil
	}))
	// Pieces are final text as the consumer gets to it: a slow consumer
	// gets fewer, longer pieces, never a different text.
	if buf.String() != res.Text || pieces < 1 {
		t.Errorf("streamed %q in %d pieces, text %q", buf.String(), pieces, res.Text)
	}
	stop := errors.New("enough")
	_, err := e.Generate(context.Background(), "x", engine.WithStream(func([]byte) error { return stop }))
	if !errors.Is(err, stop) {
		t.Errorf("stream error: got %v", err)
	}
}

func TestMetrics(t *testing.T) {
	f := newFakeModel()
	e := newEngine(t, f, engine.WithMaxTokens(20), engine.WithTokenMetrics(true))
	res := generate(t, e, "x", engine.WithSeed(1))
	s := res.Stats
	if len(s.Entropy) != s.Sampled || len(s.Surprisal) != s.Sampled {
		t.Fatalf("%d entropies, %d surprisals, %d sampled", len(s.Entropy), len(s.Surprisal), s.Sampled)
	}
	// Noise logits are uniform on [-3, 3): the entropy is close to
	// ln V minus a little.
	lnV := math.Log(float64(f.VocabSize()))
	if h := s.MeanEntropy(); !(h > lnV-1 && h < lnV) {
		t.Errorf("mean entropy %v, ln V %v", h, lnV)
	}
	if p := s.Perplexity(); !(p > 1 && p < float64(f.VocabSize())) {
		t.Errorf("perplexity %v", p)
	}
}

func TestJumpForwardHoldsBackMergeable(t *testing.T) {
	f := newFakeModel()
	f.script = []byte(`{"a":[1]}`)
	grammar := `root ::= "{\"a\":" ( "{\"b\":1}" | "[1]" ) "}"`
	e := newEngine(t, f, engine.WithSampling(greedy), engine.WithGrammar(grammar))
	// Compiled and precomputed first: a generation's last prompt token
	// waits for its grammar's precomputation, which would otherwise split
	// the first batch below whenever the precomputation is slower than
	// reaching the loop.
	if _, err := e.Compile(); err != nil {
		t.Fatal(err)
	}
	res := generate(t, e, "x")
	var parts []string
	for _, tok := range res.Tokens {
		parts = append(parts, string(f.toks[tok]))
	}
	// `{"a":` is forced, but `":` is held back: `":[` is a longer token
	// the grammar allows, and the model takes it. Then `1]}` is forced.
	want := []string{`{"`, `a`, `":[`, `1`, `]`, `}`}
	if strings.Join(parts, "|") != strings.Join(want, "|") {
		t.Errorf("tokens %q, want %q", parts, want)
	}
	if res.Stats.Forced != 5 || res.Stats.Sampled != 1 || res.Stop != engine.StopGrammar {
		t.Errorf("forced %d sampled %d stop %s, want 5 forced, 1 sampled, stop grammar", res.Stats.Forced, res.Stats.Sampled, res.Stop)
	}
	// The forced start is decoded in one batch.
	if len(f.decodes) == 0 || f.decodes[0] != 2 {
		t.Errorf("decode batches %v, want a first batch of 2", f.decodes)
	}

	// Without jump-forward every token is sampled.
	f.decodes = nil
	res = generate(t, e, "x", engine.WithJumpForward(false))
	if res.Stats.Forced != 0 || res.Output != `{"a":[1]}` || res.Stats.Sampled != 6 {
		t.Errorf("no jump: forced %d output %q", res.Stats.Forced, res.Output)
	}
	for _, n := range f.decodes {
		if n != 1 {
			t.Errorf("no jump: decode batches %v", f.decodes)
			break
		}
	}
}

func TestJumpForwardRetokenizesSampledToken(t *testing.T) {
	// The model samples `"` after `1`; the grammar then forces `}`, and
	// `"}` is one token: the sampled token is re-tokenized with the forced
	// text.
	f := newFakeModel()
	f.script = []byte(`["1"]`)
	e := newEngine(t, f, engine.WithSampling(greedy), engine.WithGrammar(`root ::= "[\"" [0-9]+ "\"]"`))
	res := generate(t, e, "x")
	var parts []string
	for _, tok := range res.Tokens {
		parts = append(parts, string(f.toks[tok]))
	}
	if got := strings.Join(parts, "|"); got != `[|"|1|"]` {
		t.Errorf("tokens %s, want [|\"|1|\"]", got)
	}
}

func TestCloseOut(t *testing.T) {
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	closed := 0
	for _, budget := range []int{13, 14, 16, 20} {
		for seed := range uint32(10) {
			f := newFakeModel()
			f.noEOS = true
			e := newEngine(t, f, engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(budget))
			res := generate(t, e, "x", engine.WithSeed(seed))
			doc, err := decodeJSON(res.Output)
			if err != nil {
				t.Fatalf("budget %d seed %d: %q: %v", budget, seed, res.Output, err)
			}
			if err := v.Validate(doc); err != nil {
				t.Fatalf("budget %d seed %d: %q: %v", budget, seed, res.Output, err)
			}
			if len(res.Tokens) > budget {
				t.Errorf("budget %d seed %d: %d tokens", budget, seed, len(res.Tokens))
			}
			if res.Stats.CloseOut > 0 {
				closed++
				if res.Stop != engine.StopBudget {
					t.Errorf("closed out, stop %s", res.Stop)
				}
			}
		}
	}
	if closed == 0 {
		t.Error("no generation was closed out")
	}
	e := newEngine(t, newFakeModel(), engine.WithSchema([]byte(personSchema)), engine.WithMaxTokens(5))
	if _, err := e.Generate(context.Background(), "x"); !errors.Is(err, engine.ErrBudget) {
		t.Errorf("budget 5: got %v, want ErrBudget", err)
	}
}

func TestContextIsTheDefaultBudget(t *testing.T) {
	f := newFakeModel()
	f.noEOS = true
	f.ctx = 30
	e := newEngine(t, f, engine.WithSchema([]byte(personSchema)))
	res := generate(t, e, "A person: ", engine.WithSeed(7))
	if n := res.Stats.PromptTokens + len(res.Tokens); n > f.ctx {
		t.Errorf("%d prompt + %d generated tokens, context %d", res.Stats.PromptTokens, len(res.Tokens), f.ctx)
	}
	if !json.Valid([]byte(res.Output)) {
		t.Errorf("invalid %q", res.Output)
	}
	f.ctx = 5
	if _, err := e.Generate(context.Background(), "a prompt longer than five tokens"); !errors.Is(err, engine.ErrContextFull) {
		t.Errorf("long prompt: got %v", err)
	}
}

func TestStopConditions(t *testing.T) {
	f := newFakeModel()
	f.noEOS = true
	e := newEngine(t, f)
	res := generate(t, e, "x", engine.WithGrammar(`root ::= "a" [0-9]{3}`), engine.WithSeed(1))
	if res.Stop != engine.StopGrammar || len(res.Output) != 4 {
		t.Errorf("grammar stop: %q %s", res.Output, res.Stop)
	}
	res = generate(t, e, "x", engine.WithMaxTokens(7), engine.WithSeed(1))
	if res.Stop != engine.StopBudget || len(res.Tokens) != 7 {
		t.Errorf("budget stop: %d tokens %s", len(res.Tokens), res.Stop)
	}
	// EOS is allowed only where the grammar can end.
	f.noEOS = false
	f.script = []byte("ab")
	res = generate(t, e, "x", engine.WithSampling(greedy), engine.WithGrammar(`root ::= [a-z]+ ("." [a-z]+)?`))
	if res.Stop != engine.StopEOG || res.Output != "ab" {
		t.Errorf("eog stop: %q %s", res.Output, res.Stop)
	}
	f.script = []byte("")
	res = generate(t, e, "x", engine.WithSampling(greedy), engine.WithGrammar(`root ::= [a-z]+ ("." [a-z]+)?`))
	if res.Stop == engine.StopEOG && res.Output == "" {
		t.Errorf("EOS before the grammar can end")
	}
}

func TestGumbelWhereEverythingIsAllowed(t *testing.T) {
	f := newFakeModel()
	for b := 0x80; b < 0x100; b++ {
		f.toks[b] = nil // no non-ASCII tokens: [\x00-\x7F]* allows every normal token
	}
	f.noEOS = true
	e := newEngine(t, f, engine.WithMaxTokens(30))
	res := generate(t, e, "x", engine.WithGrammar(`root ::= [\x00-\x7F]*`), engine.WithSeed(2))
	if res.Stats.Gumbel != res.Stats.Sampled || res.Stats.Constrained != 0 {
		t.Errorf("gumbel %d constrained %d of %d", res.Stats.Gumbel, res.Stats.Constrained, res.Stats.Sampled)
	}
	res = generate(t, e, "x", engine.WithGrammar(`root ::= [a-z]*`), engine.WithSeed(2))
	if res.Stats.Gumbel != 0 || res.Stats.Constrained != res.Stats.Sampled {
		t.Errorf("[a-z]*: gumbel %d constrained %d of %d", res.Stats.Gumbel, res.Stats.Constrained, res.Stats.Sampled)
	}
	// A chain Gumbel-max cannot express uses the chain everywhere.
	p := cpu.LlamaDefaults()
	p.TypicalP = 0.9
	res = generate(t, e, "x", engine.WithGrammar(""), engine.WithSampling(p), engine.WithSeed(2))
	if res.Stats.Gumbel != 0 {
		t.Errorf("typical-p: %d Gumbel draws", res.Stats.Gumbel)
	}
}

func TestLazyTrigger(t *testing.T) {
	doc := `{"name":"cat","age":3,"status":"paid"}`
	f := newFakeModel()
	f.script = []byte("Sure! <tool_call>" + doc)
	e := newEngine(t, f, engine.WithSampling(greedy), engine.WithSchema([]byte(personSchema)), engine.WithLazyTrigger("<tool_call>"))
	res := generate(t, e, "x")
	if res.Text != string(f.script) || res.Output != doc || !res.Triggered {
		t.Fatalf("text %q output %q triggered %v", res.Text, res.Output, res.Triggered)
	}
	if res.Stats.Gumbel == 0 || res.Stats.Constrained == 0 || res.Stats.Forced == 0 {
		t.Errorf("gumbel %d constrained %d forced %d", res.Stats.Gumbel, res.Stats.Constrained, res.Stats.Forced)
	}

	// No trigger: free text, no output.
	f.script = []byte("No tools needed.")
	res = generate(t, e, "x")
	if res.Text != string(f.script) || res.Triggered || res.Output != "" {
		t.Errorf("untriggered: text %q output %q triggered %v", res.Text, res.Output, res.Triggered)
	}

	// The token that completes the trigger goes past it ("```json\n"):
	// the grammar takes the rest when it can ...
	f.script = []byte("Here ```json\n" + doc)
	g := `root ::= [ \n]* "{\"name\":\"" [a-z]+ "\"}"`
	res = generate(t, e, "x", engine.WithGrammar(g), engine.WithLazyTrigger("```json"))
	if !strings.HasPrefix(res.Output, "\n{\"name\":\"") || !strings.HasSuffix(res.Text, res.Output) || !strings.HasSuffix(res.Text[:len(res.Text)-len(res.Output)], "```json") {
		t.Errorf("tail accepted: text %q output %q", res.Text, res.Output)
	}
	// ... and else the token is cut back to the trigger.
	res = generate(t, e, "x", engine.WithLazyTrigger("```json"))
	if !strings.HasPrefix(res.Output, `{"name":"`) || !strings.HasSuffix(res.Text[:len(res.Text)-len(res.Output)], "Here ```json") {
		t.Errorf("tail rejected: text %q output %q", res.Text, res.Output)
	}
	if spell(f, res.Tokens) != res.Text {
		t.Errorf("tokens spell %q, text %q", spell(f, res.Tokens), res.Text)
	}
}

func TestChat(t *testing.T) {
	f := newFakeModel()
	f.script = []byte("ok")
	e := newEngine(t, f, engine.WithSampling(greedy))
	if _, err := e.Generate(context.Background(), "hi", engine.WithChat(true, "")); !errors.Is(err, engine.ErrNoChatTemplate) {
		t.Errorf("no template: %v", err)
	}
	f.tmpl = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
	generate(t, e, "hi", engine.WithChat(true, "Be brief."))
	want := "<s><|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
	prompt, _ := f.last()
	if got := spell(f, prompt); got != want {
		t.Errorf("prompt %q, want %q", got, want)
	}
	im := int32(-1)
	for i, tk := range f.toks {
		if string(tk) == "<|im_start|>" {
			im = int32(i)
		}
	}
	if prompt[1] != im {
		t.Errorf("chat markers not parsed as special tokens: %v", prompt)
	}
}

func TestFormatChat(t *testing.T) {
	for _, tc := range []struct{ tmpl, want string }{
		{"...<|start_header_id|>...", "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"<|im_start|>", "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"},
		{"<start_of_turn>", "<start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\n"},
		{"<|user|> <|end|>", "<|system|>\nS<|end|>\n<|user|>\nU<|end|>\n<|assistant|>\n"},
		{"[INST]", "[INST] S\n\nU [/INST]"},
	} {
		got, err := engine.FormatChat(tc.tmpl, "S", "U")
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
	if _, err := engine.FormatChat("{{ unknown }}", "", "U"); !errors.Is(err, engine.ErrUnknownChatTemplate) {
		t.Errorf("unknown template: %v", err)
	}
}

func TestErrors(t *testing.T) {
	f := newFakeModel()
	e := newEngine(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Generate(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	f.failAt = 15
	f.noEOS = true
	if _, err := e.Generate(context.Background(), "x", engine.WithMaxTokens(50)); err == nil || !strings.Contains(err.Error(), "decode failure") {
		t.Errorf("decode failure: %v", err)
	}
	f.failAt = 0
	for _, tc := range []struct {
		opt  engine.Option
		want string
	}{
		{engine.WithMaxTokens(-1), "WithMaxTokens"},
		{engine.WithLazyTrigger(""), "trigger 0 is empty"},
		{engine.WithSampling(cpu.Params{TopP: 2}), "TopP"},
		{engine.WithSchema(nil), "empty schema"},
		{engine.WithGrammar(`root ::= "a`), "1:"},
		{engine.WithSchema([]byte(`{"type":"strin"}`)), "#"},
	} {
		_, err := e.Generate(context.Background(), "x", tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error with %q, got %v", tc.want, err)
		}
	}
}

func TestNoModel(t *testing.T) {
	e, err := engine.New(nil, engine.WithSchema([]byte(personSchema)))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for seed := range uint32(200) {
		res := generate(t, e, "", engine.WithSeed(seed))
		doc, err := decodeJSON(res.Output)
		if err != nil {
			t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
		}
		if err := v.Validate(doc); err != nil {
			t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
		}
		seen[res.Output] = true
		if again := generate(t, e, "", engine.WithSeed(seed)); again.Output != res.Output {
			t.Fatalf("seed %d: %q then %q", seed, res.Output, again.Output)
		}
	}
	if len(seen) < 190 {
		t.Errorf("%d distinct instances of 200", len(seen))
	}
	if _, err := e.Generate(context.Background(), "a prompt"); err == nil {
		t.Error("no-model mode accepted a prompt")
	}
	if _, err := e.Generate(context.Background(), "", engine.WithGrammar("")); !errors.Is(err, engine.ErrNoConstraint) {
		t.Errorf("no grammar: %v", err)
	}
	res := generate(t, e, "", engine.WithMaxBytes(40), engine.WithSeed(1))
	if len(res.Output) > 40 || !json.Valid([]byte(res.Output)) {
		t.Errorf("40-byte budget: %q", res.Output)
	}
}

func TestLenientValidationError(t *testing.T) {
	schema := `{"type":"array","items":{"enum":[1,2]},"uniqueItems":true,"minItems":2,"maxItems":2}`
	e, err := engine.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Generate(context.Background(), "", engine.WithSchema([]byte(schema))); err == nil || !strings.Contains(err.Error(), "uniqueItems") {
		t.Fatalf("strict: %v", err)
	}
	invalid := 0
	for seed := range uint32(20) {
		res, err := e.Generate(context.Background(), "", engine.WithSchema([]byte(schema)), engine.WithLenient(true), engine.WithSeed(seed))
		var ve *engine.ValidationError
		switch {
		case errors.As(err, &ve):
			invalid++
			if res == nil || res.Output != ve.Output || len(res.Warnings) == 0 {
				t.Errorf("validation error without result/warnings: %v", res)
			}
		case err != nil:
			t.Fatal(err)
		}
	}
	if invalid == 0 || invalid == 20 {
		t.Errorf("%d of 20 lenient outputs invalid, want some", invalid)
	}
}

// Objects with free keys never repeat a key (the key guard), also at a
// tight budget and where the keys run out; without the guard, the same
// generations repeat keys. The scripted cases make the model want a
// repeated key (and, with two names, a third member).
func TestUniqueKeys(t *testing.T) {
	const twoNames = `{"type":"object","additionalProperties":{"type":"boolean"},"propertyNames":{"enum":["a","b"]}}`
	for _, tc := range []struct {
		name, schema, script string
		greedy               bool
	}{
		{"short keys", `{"type":"object","additionalProperties":{"type":"integer","minimum":0,"maximum":9},"propertyNames":{"maxLength":1},"maxProperties":40}`, "", false},
		{"wants a repeat", twoNames, `{"a":true,"a":false}`, true},
		{"wants a third", twoNames, `{"a":true,"b":false,"a":true}`, true},
		{"escaped repeat", `{"type":"object","additionalProperties":{"type":"integer"}}`, `{"ab":1,"a\u0062":2}`, true},
		{"nested", `{"type":"array","items":{"type":"object","patternProperties":{"^[a-c]$":{"type":"integer","minimum":0,"maximum":3}},"additionalProperties":false},"maxItems":4}`, `[{"a":1,"a":2},{"b":1,"c":2,"b":3}]`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := jsonschema2gbnf.CompileSchema([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			f := newFakeModel()
			f.noEOS = true
			opts := []engine.Option{engine.WithSchema([]byte(tc.schema))}
			if tc.script != "" {
				f.script, f.noEOS = []byte(tc.script), false
				opts = append(opts, engine.WithSampling(greedy))
			}
			e := newEngine(t, f, opts...)
			dupsWithout := 0
			for seed := range uint32(40) {
				for _, budget := range []int{120, 25} {
					res := generate(t, e, "x", engine.WithSeed(seed), engine.WithMaxTokens(budget))
					if dups, err := jsonkeys.Duplicates([]byte(res.Output)); err != nil || len(dups) > 0 {
						t.Fatalf("seed %d budget %d: %q: duplicates %v, %v", seed, budget, res.Output, dups, err)
					}
					doc, err := decodeJSON(res.Output)
					if err != nil {
						t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
					}
					if err := v.Validate(doc); err != nil {
						t.Fatalf("seed %d: %q: %v", seed, res.Output, err)
					}
					if seed == 0 && budget == 120 {
						t.Logf("with the guard: %s", res.Output)
					}
					off, err := e.Generate(context.Background(), "x", engine.WithSeed(seed), engine.WithMaxTokens(budget), engine.WithUniqueKeys(false))
					if err == nil {
						if dups, _ := jsonkeys.Duplicates([]byte(off.Output)); len(dups) > 0 {
							dupsWithout++
						}
					}
				}
			}
			t.Logf("without the guard: %d of 80 outputs repeat a key", dupsWithout)
			if dupsWithout == 0 {
				t.Error("the control never repeats a key: the test does not test the guard")
			}
		})
	}
}
