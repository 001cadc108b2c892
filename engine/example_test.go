package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/structgen/structgen/engine"
)

// Without a model (New(nil)) the engine samples the grammar itself: a
// generator of valid documents for a schema. With a model, pass it to
// New (engine/llamacpp.Load) and give Generate a prompt.
func ExampleNew() {
	schema := []byte(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "minLength": 1, "maxLength": 12},
			"age": {"type": "integer", "minimum": 0, "maximum": 120}
		},
		"required": ["name", "age"],
		"additionalProperties": false
	}`)
	e, err := engine.New(nil, engine.WithSchema(schema))
	if err != nil {
		log.Fatal(err)
	}
	for seed := range uint32(3) {
		res, err := e.Generate(context.Background(), "", engine.WithSeed(seed))
		if err != nil {
			log.Fatal(err)
		}
		var v struct {
			Name string `json:"name"`
			Age  int    `json:"age"`
		}
		err = json.Unmarshal([]byte(res.Output), &v) // res.Output was validated against the schema
		fmt.Println(err, len(v.Name) >= 1, v.Age >= 0 && v.Age <= 120)
	}
	// Output:
	// <nil> true true
	// <nil> true true
	// <nil> true true
}

// Options given to Generate apply on top of the engine's defaults: here a
// GBNF grammar for one call, and a seed that makes the output
// reproducible.
func ExampleEngine_Generate() {
	e, err := engine.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	grammar := engine.WithGrammar(`root ::= ("yes" | "no") "." [0-9]`)
	a, err := e.Generate(context.Background(), "", grammar, engine.WithSeed(7))
	if err != nil {
		log.Fatal(err)
	}
	b, _ := e.Generate(context.Background(), "", grammar, engine.WithSeed(7))
	fmt.Println(len(a.Output) >= 4, a.Output == b.Output, a.Stop)
	// Output:
	// true true eog
}
