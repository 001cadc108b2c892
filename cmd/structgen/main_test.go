package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/internal/maskbench"
	"github.com/structgen/structgen/internal/sharedtest"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

// binary is the structgen command built once for the tests, with the build
// tags of the test binary itself (llamaBuild).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "structgen-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "structgen")
	args := []string{"build", "-o", binary}
	if llamaBuild {
		args = append(args, "-tags", "llamacpp")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(dir)
		panic("building structgen: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// mustValidate fails the test unless line is one JSON document valid
// against v (numbers kept as json.Number: the grammar does not bound them
// to float64).
func mustValidate(t *testing.T, v *jsonschema.Schema, line string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	if dec.More() {
		t.Fatalf("%q: more than one document", line)
	}
	if err := v.Validate(doc); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","b"]}}},"required":["name","age"],"additionalProperties":false}`

// Failures are one line on stderr with the right exit status.
func TestErrors(t *testing.T) {
	good := writeFile(t, "person.json", personSchema)
	badSchema := writeFile(t, "bad.json", `{"type":"object","properties":{"age":{"type":"integr"}}}`)
	badJSON := writeFile(t, "broken.json", `{"type":`)
	badGrammar := writeFile(t, "bad.gbnf", "root ::= item\nitem ::= \"a\" | \n  ( \"b\"\n")
	notGGUF := writeFile(t, "model.gguf", "this is not a GGUF file")
	missing := filepath.Join(t.TempDir(), "missing.json")
	modelWant, modelCode := "make build", 2
	if llamaBuild {
		modelWant, modelCode = "GGUF", 1
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in the stderr line
	}{
		{"missing schema", []string{"--schema", missing}, 1, "missing.json: no such file"},
		{"missing grammar", []string{"--grammar", missing}, 1, "missing.json: no such file"},
		{"bad schema", []string{"--schema", badSchema}, 1, "#/properties/age/type"},
		{"broken schema", []string{"--schema", badJSON}, 1, "broken.json: "},
		{"bad grammar", []string{"--grammar", badGrammar}, 1, "bad.gbnf:4:1:"},
		{"model", []string{"--model", notGGUF, "--schema", good, "--prompt", "x"}, modelCode, modelWant},
		{"bad flag", []string{"--schema", good, "--bogus"}, 2, "unknown flag --bogus"},
		{"bad whitespace", []string{"--schema", good, "--whitespace", "wide"}, 2, "--whitespace"},
		{"both", []string{"--schema", good, "--grammar", good}, 2, "can't be used together"},
		{"no constraint", []string{}, 2, "--schema or --grammar"},
		{"prompt without model", []string{"--schema", good, "--prompt", "hi"}, 2, "--prompt needs --model"},
		{"n zero", []string{"--schema", good, "-n", "0"}, 2, "-n 0"},
		{"bad seed", []string{"--schema", good, "--seed", "-4"}, 2, "--seed"},
		{"bad top-p", []string{"--schema", good, "--top-p", "7"}, 2, "TopP"},
		{"bad sampler", []string{"--schema", good, "--samplers", "top_k;bogus"}, 2, "bogus"},
		{"tiny budget", []string{"--schema", good, "--max-bytes", "5"}, 1, "budget"},
		{"check no constraint", []string{"check", good}, 2, "--schema"},
		{"grammar no schema", []string{"grammar"}, 2, "--schema"},
		{"bench unknown case", []string{"bench", "--cases", "99", "--compiles", "1", "--passes", "1"}, 2, "no case"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "bench unknown case" {
				sharedtest.Dir(t)
			}
			r := runCLI(t, "", tc.args...)
			lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
			if r.code != tc.code || len(lines) != 1 || !strings.HasPrefix(lines[0], "structgen: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and one line with %q", r.code, r.stderr, tc.code, tc.want)
			}
			if tc.code != 0 && r.stdout != "" {
				t.Errorf("stdout %q on failure", r.stdout)
			}
		})
	}
}

// Without a model, every output validates, -n gives one per line, and a
// seed reproduces them.
func TestGenerateNoModel(t *testing.T) {
	schema := writeFile(t, "person.json", personSchema)
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "--schema", schema, "-n", "50", "--seed", "7")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	distinct := map[string]bool{}
	for _, l := range lines {
		mustValidate(t, v, l)
		distinct[l] = true
	}
	if len(distinct) < 45 {
		t.Errorf("%d distinct of 50", len(distinct))
	}
	if again := runCLI(t, "", "--schema", schema, "-n", "50", "--seed", "7"); again.stdout != r.stdout {
		t.Error("the same seed gave other outputs")
	}
	// Output i uses seed+i.
	if third := runCLI(t, "", "--schema", schema, "--seed", "9"); third.stdout != lines[2]+"\n" {
		t.Errorf("--seed 9 gave %q, want the third output of --seed 7 %q", third.stdout, lines[2])
	}
	s := runCLI(t, "", "--schema", schema, "--seed", "7", "--stream", "--stats")
	if s.stdout != lines[0]+"\n" || !strings.Contains(s.stderr, "seed 7") {
		t.Errorf("--stream --stats: %q, stderr %q", s.stdout, s.stderr)
	}

	g := writeFile(t, "ab.gbnf", `root ::= ("a" | "b"){3} [0-9]+`)
	r = runCLI(t, "", "--grammar", g, "-n", "20", "--seed", "1")
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if len(l) < 4 || strings.Trim(l[:3], "ab") != "" || strings.Trim(l[3:], "0123456789") != "" {
			t.Errorf("grammar output %q", l)
		}
	}
}

func TestGrammarCommand(t *testing.T) {
	schema := writeFile(t, "person.json", personSchema)
	for _, ws := range []string{"compact", "flexible"} {
		r := runCLI(t, "", "grammar", "--schema", schema, "--whitespace", ws)
		want, err := jsonschema2gbnfConvert(personSchema, ws == "flexible")
		if err != nil {
			t.Fatal(err)
		}
		if r.code != 0 || r.stdout != want {
			t.Errorf("%s: exit %d, output %q, want %q", ws, r.code, r.stdout, want)
		}
		if _, err := gbnf.Parse(r.stdout); err != nil {
			t.Errorf("%s: printed grammar does not parse: %v", ws, err)
		}
	}
	lenient := writeFile(t, "uniq.json", `{"type":"array","uniqueItems":true}`)
	if r := runCLI(t, "", "grammar", "--schema", lenient); r.code != 1 || !strings.Contains(r.stderr, "uniqueItems") {
		t.Errorf("strict: exit %d, %q", r.code, r.stderr)
	}
	if r := runCLI(t, "", "grammar", "--schema", lenient, "--lenient"); r.code != 0 || !strings.Contains(r.stderr, "warning") || r.stdout == "" {
		t.Errorf("lenient: exit %d, %q", r.code, r.stderr)
	}
}

func jsonschema2gbnfConvert(schema string, flexible bool) (string, error) {
	var opts []jsonschema2gbnf.Option
	if flexible {
		opts = append(opts, jsonschema2gbnf.FlexibleWhitespace(0))
	}
	return jsonschema2gbnf.Convert([]byte(schema), opts...)
}

// check validates a document against the schema (exit status 1 only when
// it is invalid) and separately says whether the grammar accepts its
// canonical form; --exact (and --grammar) checks the bytes themselves.
func TestCheck(t *testing.T) {
	schema := writeFile(t, "person.json", personSchema)
	good := writeFile(t, "good.json", `{"name":"Ann","age":31,"tags":["a"]}`+"\n")
	bad := writeFile(t, "bad.json", "{\"name\":\"Ann\",\n\"age\":31}")
	pattern := writeFile(t, "pattern.json", `{"type":"object","properties":{"code":{"type":"string","pattern":"^[a-z]+$"},"n":{"type":"integer"}}}`)
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  []string // in stdout+stderr
	}{
		{"compact", []string{"check", "--schema", schema, good}, "", 0, []string{"good.json: valid against", "good.json: canonical form accepted by the grammar"}},
		{"json.dumps", []string{"check", "--schema", schema}, `{"name": "Ann", "age": 31, "tags": ["a", "b"]}`, 0, []string{"<stdin>: valid", "canonical form accepted"}},
		{"pretty", []string{"check", "--schema", schema}, "{\n    \"tags\": [],\n    \"age\": 3,\n    \"name\": \"B\"\n}\n", 0, []string{"<stdin>: valid", "canonical form accepted"}},
		{"u escapes", []string{"check", "--schema", pattern}, `{"code":"\u0061b\u0063"}`, 0, []string{"valid", "canonical form accepted"}},
		{"2.0 integer", []string{"check", "--schema", pattern}, `{"n":2.0}`, 0, []string{"<stdin>: valid", "canonical form accepted"}},
		{"missing", []string{"check", "--schema", schema}, "{\n \"name\": \"Ann\",\n \"tags\": [{\"x\":1}]}", 1, []string{
			`<stdin>:1:1: invalid: #/age: missing required property "age"`,
			`<stdin>:3:11: invalid: #/tags/0: value must be one of "a", "b"`,
			"structgen: <stdin>: invalid against", "2 problem(s)"}},
		{"nested missing", []string{"check", "--schema", writeFile(t, "nested.json", `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","required":["sku","qty"]}}}}`)},
			`{"items":[{"sku":"a","qty":1},{"qty":2}]}`, 1, []string{`<stdin>:1:31: invalid: #/items/1/sku: missing required property "sku"`}},
		{"duplicate", []string{"check", "--schema", schema}, `{"name":"Ann","age":3,"name":"Bo"}`, 1, []string{`<stdin>:1:23: invalid: #/name: duplicate key "name" (first at 1:2)`}},
		{"out of range", []string{"check", "--schema", schema}, `{"name":"Ann","age":200}`, 1, []string{"<stdin>:1:21: invalid: #/age: must be <= 150"}},
		{"not JSON", []string{"check", "--schema", schema}, "{\"name\":\"Ann\",}", 1, []string{"<stdin>:1:15: not JSON"}},
		{"trailing data", []string{"check", "--schema", schema}, `{"name":"Ann","age":1} {}`, 1, []string{"<stdin>:1:24: not JSON: invalid character '{' after top-level value"}},
		{"empty", []string{"check", "--schema", schema}, "", 1, []string{"<stdin>:1:1: not JSON: unexpected end of JSON input"}},
		{"no strict grammar", []string{"check", "--schema", writeFile(t, "uniq.json", `{"type":"array","uniqueItems":true}`)}, `[1,2]`, 0,
			[]string{"<stdin>: valid against", "no grammar to check the canonical form with", `unsupported keyword "uniqueItems"`}},
		{"no strict grammar, invalid", []string{"check", "--schema", writeFile(t, "uniq.json", `{"type":"array","uniqueItems":true}`)}, `[1,1]`, 1,
			[]string{"<stdin>:1:1: invalid: #: items at index 0 and 1 are equal"}},
		{"broken schema", []string{"check", "--schema", writeFile(t, "broken.json", `{"type":`)}, `{}`, 1, []string{"broken.json: #: invalid schema: 1:9"}},
		{"exact", []string{"check", "--exact", "--schema", schema, good}, "", 0, []string{"good.json: accepted"}},
		{"exact newline", []string{"check", "--exact", "--schema", schema, "--keep-newline", good}, "", 1, []string{"good.json:1:37: rejected: byte 36"}},
		{"exact layout", []string{"check", "--exact", "--schema", schema, bad}, "", 1, []string{"bad.json:1:15: rejected: byte 14"}},
		{"exact flexible", []string{"check", "--exact", "--schema", schema, "--whitespace", "flexible", bad}, "", 0, []string{"accepted"}},
		{"exact prefix", []string{"check", "--exact", "--schema", schema}, `{"name":"Ann","age":1`, 1, []string{"<stdin>:1:22: rejected: the input ends before a complete document"}},
		{"exact order", []string{"check", "--exact", "--schema", schema}, `{"age":1,"name":"Ann"}`, 1, []string{"<stdin>:1:3: rejected"}},
		{"exact any order", []string{"check", "--exact", "--any-order", "--schema", schema}, `{"age":1,"name":"Ann"}`, 0, []string{"<stdin>: accepted"}},
		{"grammar", []string{"check", "--grammar", writeFile(t, "ab.gbnf", `root ::= "a"+ "b"`)}, "aaab", 0, []string{"<stdin>: accepted"}},
		{"missing file", []string{"check", "--schema", schema, filepath.Join(t.TempDir(), "none.json")}, "", 1, []string{"none.json: no such file"}},
	} {
		r := runCLI(t, tc.stdin, tc.args...)
		out := r.stdout + r.stderr
		for _, w := range tc.want {
			if r.code != tc.code || !strings.Contains(out, w) {
				t.Errorf("%s: exit %d, %q; want exit %d with %q", tc.name, r.code, out, tc.code, w)
			}
		}
	}
}

// With --whitespace flexible, -n still writes one instance per line, each
// valid and a sentence of the flexible grammar.
func TestFlexibleNDJSON(t *testing.T) {
	schema := writeFile(t, "person.json", personSchema)
	v, err := jsonschema2gbnf.CompileSchema([]byte(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"--stream=false", "--stream"} {
		r := runCLI(t, "", "--schema", schema, "--whitespace", "flexible", "-n", "30", "--seed", "4", stream)
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if r.code != 0 || len(lines) != 30 {
			t.Fatalf("%s: exit %d, %d lines (want 30): %q %s", stream, r.code, len(lines), r.stdout, r.stderr)
		}
		spaced := 0
		for _, l := range lines {
			mustValidate(t, v, l)
			if c := runCLI(t, l, "check", "--exact", "--schema", schema, "--whitespace", "flexible"); c.code != 0 {
				t.Errorf("%q not a sentence of the flexible grammar: %s", l, c.stderr)
			}
			if strings.Contains(l, " ") {
				spaced++
			}
		}
		if spaced == 0 {
			t.Errorf("%s: no whitespace in 30 flexible instances", stream)
		}
	}
}

// --any-order lets properties come in any order; the default is the
// schema's order.
func TestAnyOrder(t *testing.T) {
	schema := writeFile(t, "person.json", personSchema)
	for _, anyOrder := range []bool{false, true} {
		args := []string{"--schema", schema, "-n", "40", "--seed", "1"}
		if anyOrder {
			args = append(args, "--any-order")
		}
		r := runCLI(t, "", args...)
		reordered := 0
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if strings.Index(l, `"age"`) < strings.Index(l, `"name"`) {
				reordered++
			}
		}
		if r.code != 0 || (reordered > 0) != anyOrder {
			t.Errorf("--any-order=%v: exit %d, %d of 40 with age before name", anyOrder, r.code, reordered)
		}
	}
	g := runCLI(t, "", "grammar", "--schema", schema, "--any-order")
	plain := runCLI(t, "", "grammar", "--schema", schema)
	if g.code != 0 || g.stdout == plain.stdout {
		t.Errorf("grammar --any-order: exit %d, same grammar as without", g.code)
	}
}

// An order that leaves top_p and min_p out works without turning them off
// by hand: samplers not in the order are not used.
func TestSamplersOrder(t *testing.T) {
	schema := writeFile(t, "person.json", personSchema)
	for _, order := range []string{"top_k;temperature", "min_p", "top-k,temp"} {
		if r := runCLI(t, "", "--schema", schema, "--samplers", order, "--seed", "1"); r.code != 0 {
			t.Errorf("--samplers %s: exit %d: %s", order, r.code, r.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	r := runCLI(t, "", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "check") {
		t.Errorf("--help: exit %d %q", r.code, r.stdout)
	}
	r = runCLI(t, "", "generate", "--help")
	for _, flag := range []string{"--schema", "--grammar", "--model", "--prompt", "--prompt-file", "-n", "--seed", "--temperature", "--top-k", "--top-p", "--min-p", "--repeat-penalty", "--samplers", "--max-tokens", "--stream", "--whitespace", "--lenient"} {
		if !strings.Contains(r.stdout, flag) {
			t.Errorf("generate --help lacks %s", flag)
		}
	}
}

func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	sharedtest.Dir(t)
	r := runCLI(t, "", "bench", "--cases", "03", "--compiles", "1", "--passes", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "03-arith-ebnf") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// bench ran itself again with free pages given back lazily (unless
	// the test's own GODEBUG decides it)
	if runtime.GOOS == "linux" && !strings.Contains(os.Getenv("GODEBUG"), "madvdontneed") {
		if !strings.Contains(r.stdout, "with MADV_FREE") {
			t.Errorf("bench did not run with MADV_FREE:\n%s", r.stdout)
		}
		// and touched its heap first, as serve does (--pretouch's default)
		if !strings.Contains(r.stdout, "Heap pretouched before the runs, as serve does (--pretouch): 512 MiB, ") {
			t.Errorf("bench did not pretouch its heap:\n%s", r.stdout)
		}
	}
	// and set the collector's floor, as serve does (--gc-floor's default)
	if !strings.Contains(r.stdout, "The heap grows by at least 256 MiB past its live size before a collection, as serve sets (--gc-floor)") {
		t.Errorf("bench did not set the GC floor:\n%s", r.stdout)
	}
	// with its reserve, ten times the floor, where one is made (Linux,
	// no GOMEMLIMIT, memory for it: gcfloor's reserveAllowed)
	if strings.Contains(r.stdout, "a reserve of") != strings.Contains(r.stdout, ", and keeps that much free heap from the scavenger (a reserve of 2560 MiB, never written).") {
		t.Errorf("bench's floor's reserve not ten times the floor:\n%s", r.stdout)
	} else if runtime.GOOS == "linux" && os.Getenv("GOMEMLIMIT") == "" && !strings.Contains(r.stdout, "a reserve of") {
		t.Logf("no reserve made here (strict overcommit, little memory or an address-space limit?)")
	}
	// --busy says where the busy process and the runs were
	if r := runCLI(t, "", "bench", "--cases", "03", "--compiles", "1", "--passes", "2", "--busy"); r.code != 0 || !strings.Contains(r.stdout, "A CPU-bound process ran beside the runs (--busy): "+maskbench.BusyPlacement()+".") {
		t.Errorf("--busy: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, bad := range []string{"--pretouch=-1", "--pretouch=1073741825", "--gc-floor=-1", "--gc-floor=1073741825"} {
		if r := runCLI(t, "", "bench", bad); r.code != exitUsage || !strings.Contains(r.stderr, "want 0..1073741824 bytes") || !strings.Contains(r.stderr, strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("bench %s: exit %d, stderr %q", bad, r.code, r.stderr)
		}
	}
}

func TestLongRunning(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"serve", "--model", "m.gguf"}, true},
		{[]string{"bench"}, true},
		{[]string{"--schema", "s.json"}, false},
		{[]string{"grammar", "--schema", "bench"}, false},
	} {
		if got := longRunning(tc.args); got != tc.want {
			t.Errorf("longRunning(%q) = %v", tc.args, got)
		}
	}
}

// --parallel runs outputs at once and prints them in order: the same lines
// as one at a time.
func TestParallelInOrder(t *testing.T) {
	schema := writeFile(t, "person.json", personSchema)
	one := runCLI(t, "", "--schema", schema, "-n", "40", "--seed", "5", "--parallel", "1")
	many := runCLI(t, "", "--schema", schema, "-n", "40", "--seed", "5", "--parallel", "7")
	if one.code != 0 || many.code != 0 {
		t.Fatalf("exit %d %q, %d %q", one.code, one.stderr, many.code, many.stderr)
	}
	if n := strings.Count(one.stdout, "\n"); n != 40 || one.stdout != many.stdout {
		t.Errorf("--parallel 7 differs from --parallel 1 (%d lines):\n%s\n---\n%s", n, many.stdout, one.stdout)
	}
	if r := runCLI(t, "", "--schema", schema, "--parallel", "999"); r.code != exitUsage {
		t.Errorf("--parallel 999: exit %d", r.code)
	}
}
