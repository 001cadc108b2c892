package jsonschema2gbnf_test

import (
	"errors"
	"fmt"

	"github.com/structgen/structgen/jsonschema2gbnf"
)

// Convert turns a schema into GBNF: properties in schema order, compact
// whitespace, bounds as digit ranges.
func ExampleConvert() {
	schema := []byte(`{
		"type": "object",
		"properties": {
			"size": {"enum": ["S", "M", "L"]},
			"count": {"type": "integer", "minimum": 1, "maximum": 12}
		},
		"required": ["size", "count"],
		"additionalProperties": false
	}`)
	g, err := jsonschema2gbnf.Convert(schema)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g)
	// Output:
	// root ::= "{" "\"size\":" ("\"S\"" | "\"M\"" | "\"L\"") "," "\"count\":" ([1-9] | "1" [0-2]) "}"
}

// What a grammar cannot enforce is an error naming the keyword and its
// JSON pointer; Lenient relaxes it to a warning instead.
func ExampleConvert_unsupported() {
	schema := []byte(`{"type":"array","items":{"type":"integer"},"uniqueItems":true}`)
	_, err := jsonschema2gbnf.Convert(schema)
	var ue *jsonschema2gbnf.UnsupportedError
	fmt.Println(errors.As(err, &ue), ue.Pointer, ue.Keyword)

	var warnings []jsonschema2gbnf.Warning
	_, err = jsonschema2gbnf.Convert(schema, jsonschema2gbnf.Lenient(&warnings))
	fmt.Println(err, len(warnings), warnings[0].Keyword)
	// Output:
	// true # uniqueItems
	// <nil> 1 uniqueItems
}

// Format rewrites a document the way the grammar writes it (schema key
// order, canonical strings), for checking a document against the grammar.
func ExampleFormat() {
	schema := []byte(`{"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`)
	doc, err := jsonschema2gbnf.Format(schema, []byte(`{ "b": 2, "a": "\u0078" }`))
	fmt.Println(string(doc), err)
	// Output:
	// {"a":"x","b":2} <nil>
}
