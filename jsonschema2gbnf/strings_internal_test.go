package jsonschema2gbnf

import (
	"strings"
	"testing"
)

// memoKey tells apart every two different argument lists (the key
// languages' memo would otherwise give one object the keys of another).
func TestMemoKey(t *testing.T) {
	many := strings.Split(strings.Repeat("x,", 51), ",")[:51]
	args := []struct {
		kind  string
		lists [][]string
	}{
		{"key", nil},
		{"key", [][]string{nil, nil, nil}},
		{"key", [][]string{{""}, nil, nil}},
		{"key", [][]string{{"a", "b"}, nil, nil}},
		{"key", [][]string{{"ab"}, nil, nil}},
		{"key", [][]string{{"a"}, {"b"}, nil}},
		{"key", [][]string{{"a"}, nil, {"b"}}},
		{"key", [][]string{{"a|b"}, nil, nil}},
		{"key", [][]string{{"a\x00b"}, nil, nil}},
		{"str|1|2", [][]string{many, nil, nil}},
		{"str|1|23", [][]string{nil, nil, nil}},
		{"str|1|2", [][]string{{"3"}, nil, nil}},
	}
	seen := map[string]int{}
	for i, a := range args {
		k := memoKey(a.kind, a.lists...)
		if j, ok := seen[k]; ok {
			t.Errorf("memoKey(%q, %q) = memoKey(%q, %q)", a.kind, a.lists, args[j].kind, args[j].lists)
		}
		seen[k] = i
		if again := memoKey(a.kind, a.lists...); again != k {
			t.Errorf("memoKey(%q, %q) not deterministic", a.kind, a.lists)
		}
	}
}
