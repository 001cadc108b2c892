package jsonschema2gbnf

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// validatorMaxLen is the longest string each format's validator accepts
// (santhosh-tekuri/jsonschema v5 format.go): an e-mail address of at most
// 254 bytes (local part 64), a host name of at most 253 before an optional
// final dot. The other formats have no length limit.
var validatorMaxLen = map[string]int{"email": 254, "hostname": 254}

// TestFormatsAgainstValidator audits every format grammar against the
// validator's own function for that format: the longest string the
// format's automaton accepts is within the validator's length limit, and
// thousands of random strings of the automaton, biased to the longest
// ones (what a decoder with a real vocabulary runs into), all pass the
// validator.
func TestFormatsAgainstValidator(t *testing.T) {
	var names []string
	for name := range jsonschema.Formats {
		if _, ok := formatRegex(name); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	rng := rand.New(rand.NewSource(1))
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			src, _ := formatRegex(name)
			re, err := parsePattern(src)
			if err != nil {
				t.Fatal(err)
			}
			d, err := regexDFA(re, true)
			if err != nil {
				t.Fatal(err)
			}
			d = d.trim()
			_, hi, ok := d.lengthRange()
			if !ok {
				t.Fatal("empty language")
			}
			if max, limited := validatorMaxLen[name]; limited && (hi < 0 || hi > max) {
				t.Errorf("the grammar accepts strings of up to %d characters (unbounded: -1), the validator at most %d", hi, max)
			}
			valid := jsonschema.Formats[name]
			for i := 0; i < 3000; i++ {
				stop := 1.0 / float64(1+i%40) // from short strings to the longest
				s := sampleDFA(d, rng, stop, 600)
				if !valid(s) {
					t.Fatalf("the grammar accepts %q (%d bytes), the validator rejects it", s, len(s))
				}
			}
		})
	}
}

// sampleDFA returns a random string of a trimmed automaton: random edges
// and characters, stopping at an accepting state with probability stop;
// after limit characters it heads for the nearest accepting state.
func sampleDFA(d *dfa, rng *rand.Rand, stop float64, limit int) string {
	n := len(d.states)
	// distance to acceptance, by a backward fixpoint
	dist := make([]int, n)
	for i := range dist {
		dist[i] = 1 << 30
		if d.states[i].accept {
			dist[i] = 0
		}
	}
	for changed := true; changed; {
		changed = false
		for i, st := range d.states {
			for _, e := range st.edges {
				if dist[e.to]+1 < dist[i] {
					dist[i] = dist[e.to] + 1
					changed = true
				}
			}
		}
	}
	var b strings.Builder
	st, k := 0, 0
	for {
		s := d.states[st]
		if s.accept && (len(s.edges) == 0 || rng.Float64() < stop || (k >= limit && dist[st] == 0)) {
			return b.String()
		}
		var es []dfaEdge
		for _, e := range s.edges {
			if k < limit || dist[e.to] < dist[st] {
				es = append(es, e)
			}
		}
		e := es[rng.Intn(len(es))]
		r := e.lo + rune(rng.Int63n(int64(e.hi-e.lo)+1))
		for !utf8.ValidRune(r) {
			r = e.lo + rune(rng.Int63n(int64(e.hi-e.lo)+1))
		}
		b.WriteRune(r)
		st = e.to
		k++
	}
}

// TestFormatDFAsShared: the automaton of every format with a regular
// expression is built once per process (formatDFAs) and shared by
// conversions running at once, each with its own copy of the header
// (run with -race); the grammars are those of a lone conversion.
func TestFormatDFAsShared(t *testing.T) {
	// formatDFAs is made from the validator's formats: a format with a
	// regular expression that the validator does not know would be
	// rebuilt in every conversion (the specification's names, the
	// validator's and some others).
	for _, name := range []string{"date-time", "date", "time", "duration", "period", "email", "idn-email",
		"hostname", "idn-hostname", "ipv4", "ip-address", "ipv6", "uri", "uri-reference", "iri", "iri-reference",
		"uriref", "uri-template", "uuid", "json-pointer", "relative-json-pointer", "regex", "host-name", "phone"} {
		for _, f := range []func(string) (string, bool){formatRegex, validatorRegex} {
			if src, ok := f(name); ok && formatDFAs[src] == nil {
				t.Errorf("format %q: its regular expression is not in formatDFAs", name)
			}
		}
	}
	schema := []byte(`{"type":"object","properties":{
		"a":{"type":"string","format":"uri","pattern":"^https:"},
		"b":{"oneOf":[{"type":"string","format":"email"},{"type":"string","format":"hostname"}]},
		"c":{"type":"string","minLength":3,"not":{"format":"date"}}}}`)
	want, err := Convert(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"uri", "email", "hostname"} {
		src, _ := formatRegex(name)
		if f := formatDFAs[src]; f.d == nil {
			t.Errorf("format %q: its automaton was not built (not shared)", name)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				got, err := Convert(schema)
				if err == nil && got != want {
					err = fmt.Errorf("another grammar:\n%s\nwant:\n%s", got, want)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
