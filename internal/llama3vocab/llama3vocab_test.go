package llama3vocab

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/mask"
)

func TestLoad(t *testing.T) {
	shared := sharedtest.Dir(t)
	v, err := Load(shared)
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != Size {
		t.Fatalf("Size = %d, want %d", v.Size(), Size)
	}
	if got := v.EOG(); !slices.Equal(got, []int32{128001, 128009}) {
		t.Errorf("EOG = %v, want [128001 128009] (the bench's stop ids)", got)
	}
	for id := range int32(Size) {
		want := mask.TokenNormal
		if id >= Regular {
			want = mask.TokenSpecial
		}
		if k := v.Kind(id); k != want {
			t.Fatalf("Kind(%d) = %v, want %v", id, k, want)
		}
	}
	names := map[int32]string{
		128000: "<|begin_of_text|>",
		128001: "<|end_of_text|>",
		128002: "<|reserved_special_token_0|>",
		128003: "<|reserved_special_token_1|>",
		128004: "<|finetune_right_pad_id|>",
		128005: "<|reserved_special_token_2|>",
		128006: "<|start_header_id|>",
		128007: "<|end_header_id|>",
		128008: "<|eom_id|>",
		128009: "<|eot_id|>",
		128010: "<|python_tag|>",
		128011: "<|reserved_special_token_3|>",
		128255: "<|reserved_special_token_247|>",
	}
	for id, name := range names {
		if got := string(v.Token(id)); got != name {
			t.Errorf("Token(%d) = %q, want %q", id, got, name)
		}
		if got, ok := v.Lookup(name); !ok || got != id {
			t.Errorf("Lookup(%q) = %d, %v; want %d", name, got, ok, id)
		}
	}
	// Regular tokens decode from byte-level BPE.
	for id, want := range map[int32]string{0: "!", 220: " ", 198: "\n", 1917: " world", 9906: "Hello"} {
		if got := string(v.Token(id)); got != want {
			t.Errorf("Token(%d) = %q, want %q", id, got, want)
		}
	}
	again, err := Load(shared)
	if err != nil || again != v {
		t.Errorf("second Load = %p, %v; want the cached %p", again, err, v)
	}
}

// TestSpecialNames checks the Llama-3.1/3.2 special-token layout: 256
// distinct <|…|> names, the reserved ones numbered 0…247 in id order.
func TestSpecialNames(t *testing.T) {
	seen := map[string]int{}
	next := 0
	for id := Regular; id < Size; id++ {
		name := SpecialName(id)
		if !strings.HasPrefix(name, "<|") || !strings.HasSuffix(name, "|>") {
			t.Errorf("SpecialName(%d) = %q", id, name)
		}
		if prev, dup := seen[name]; dup {
			t.Errorf("SpecialName(%d) = SpecialName(%d) = %q", id, prev, name)
		}
		seen[name] = id
		if rest, ok := strings.CutPrefix(name, "<|reserved_special_token_"); ok {
			if want := strconv.Itoa(next) + "|>"; rest != want {
				t.Errorf("SpecialName(%d) = %q, want reserved number %d", id, name, next)
			}
			next++
		}
	}
	if next != 248 {
		t.Errorf("%d reserved tokens, want 248", next)
	}
	for _, id := range []int{Regular - 1, Size, -1} {
		if name := SpecialName(id); name != "" {
			t.Errorf("SpecialName(%d) = %q, want \"\"", id, name)
		}
	}
}

// TestBenchDocuments decodes the bench cases' Llama-3 token ids: their
// bytes must be exactly the document (ids from a real Llama-3 tokenizer).
func TestBenchDocuments(t *testing.T) {
	shared := sharedtest.Dir(t)
	v, err := Load(shared)
	if err != nil {
		t.Fatal(err)
	}
	cases, err := filepath.Glob(filepath.Join(shared, "bench", "cases", "*", "doc.llama3.tokens.json"))
	if err != nil || len(cases) != 5 {
		t.Fatalf("bench cases: %v, %v (want 5)", cases, err)
	}
	for _, tp := range cases {
		dir := filepath.Dir(tp)
		docs, _ := filepath.Glob(filepath.Join(dir, "doc.*"))
		var doc []byte
		for _, d := range docs {
			if d != tp {
				if doc, err = os.ReadFile(d); err != nil {
					t.Fatal(err)
				}
			}
		}
		data, err := os.ReadFile(tp)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int32
		if err := json.Unmarshal(data, &ids); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for _, id := range ids {
			if v.Kind(id) != mask.TokenNormal {
				t.Fatalf("%s: id %d is %v", tp, id, v.Kind(id))
			}
			got = append(got, v.Token(id)...)
		}
		if string(got) != string(doc) {
			t.Errorf("%s: %d ids decode to %d bytes that differ from the %d-byte document", filepath.Base(dir), len(ids), len(got), len(doc))
		}
	}
}

func TestLoadMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, Dir)) {
		t.Fatalf("Load(empty dir) = %v, want an error naming %s", err, filepath.Join(dir, Dir))
	}
}

// BenchmarkLoad measures an uncached load (LoadVocab of the folder plus
// the special tokens).
func BenchmarkLoad(b *testing.B) {
	dir := filepath.Join(sharedtest.Dir(b), Dir)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
