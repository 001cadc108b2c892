package main

import (
	"fmt"

	"github.com/structgen/structgen/gbnf"
	"github.com/structgen/structgen/jsonschema2gbnf"
)

type grammarCmd struct {
	constraintFlags
}

// Run prints the GBNF of --schema (or the canonical form of --grammar).
func (c *grammarCmd) Run(e *env) error {
	switch {
	case c.Schema != "":
		b, err := e.readInput(c.Schema)
		if err != nil {
			return fmt.Errorf("--schema: %w", err)
		}
		var opts []jsonschema2gbnf.Option
		if c.Whitespace == "flexible" {
			opts = append(opts, jsonschema2gbnf.FlexibleWhitespace(0))
		}
		if c.AnyOrder {
			opts = append(opts, jsonschema2gbnf.AnyPropertyOrder())
		}
		var warnings []jsonschema2gbnf.Warning
		if c.Lenient {
			opts = append(opts, jsonschema2gbnf.Lenient(&warnings))
		}
		src, err := jsonschema2gbnf.Convert(b, opts...)
		if err != nil {
			return inFile(c.Schema, err)
		}
		for _, w := range warnings {
			fmt.Fprintf(e.stderr, "structgen: warning: %s: %s\n", c.Schema, w)
		}
		_, err = fmt.Fprint(e.stdout, src)
		return err
	case c.Grammar != "":
		b, err := e.readInput(c.Grammar)
		if err != nil {
			return fmt.Errorf("--grammar: %w", err)
		}
		g, err := gbnf.Parse(string(b))
		if err != nil {
			return inFile(c.Grammar, err)
		}
		_, err = fmt.Fprint(e.stdout, g.String())
		return err
	}
	return usagef("grammar: give --schema FILE (or --grammar FILE for its canonical form)")
}
