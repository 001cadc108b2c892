package gbnf

// ParseReference parses src through participle and the lowering of its
// AST only: the path ParseWithRoot takes for what the direct parser
// leaves to it, and the reference the direct parser is checked against.
func ParseReference(src, root string) (*Grammar, error) {
	s, err := scan(src)
	if err != nil {
		return nil, err
	}
	return s.parseParticiple(root)
}

// ParseDirect runs the direct parser alone: nil where it leaves src to
// the reference path.
func ParseDirect(src, root string) *Grammar {
	s, err := scan(src)
	if err != nil || s.invalid != nil {
		return nil
	}
	return parseDirect(s, root)
}
