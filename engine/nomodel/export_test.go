package nomodel

import "github.com/structgen/structgen/gbnf"

// SetOnChoice makes grammar-mode derivations report each choice: the
// alternation or repetition node, the branch index or count drawn, and
// the number of viable branches (or the highest count allowed).
func SetOnChoice(s *Sampler, fn func(n *gbnf.Node, k, of int)) { s.onChoice = fn }
