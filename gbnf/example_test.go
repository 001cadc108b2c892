package gbnf_test

import (
	"fmt"

	"github.com/structgen/structgen/gbnf"
)

// Parse reads llama.cpp GBNF; String prints the grammar back in canonical
// form (which Parse reads to an equal grammar).
func ExampleParse() {
	g, err := gbnf.Parse(`
# a list of small numbers
root ::= "[" (num ("," num)*)? "]"
num  ::= [0-9]{1,3}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(g.String())
	// Output:
	// root ::= "[" (num ("," num)*)? "]"
	// num ::= [0-9]{1,3}
}

// Errors carry the line and column of the problem.
func ExampleParse_error() {
	_, err := gbnf.Parse("root ::= item\nitem ::= \"a\" | (\"b\"\n")
	fmt.Println(err)
	// Output:
	// 3:1: unexpected end of input (unclosed parenthesis)
}
