package gbnf

// Equal reports whether g and h are structurally equal: the same rules
// (names, order, bodies) and root, ignoring source positions.
func (g *Grammar) Equal(h *Grammar) bool {
	if g == nil || h == nil {
		return g == h
	}
	if g.Root != h.Root || len(g.Rules) != len(h.Rules) {
		return false
	}
	for i, r := range g.Rules {
		s := h.Rules[i]
		if r.ID != s.ID || r.Name != s.Name || !NodeEqual(r.Body, s.Body) {
			return false
		}
	}
	return true
}

// NodeEqual reports whether two nodes are structurally equal, ignoring
// source positions (rule references compare by id).
func NodeEqual(a, b *Node) bool {
	return NodeEqualFunc(a, b, func(x, y RuleID) bool { return x == y })
}

// NodeEqualFunc is NodeEqual with rule references compared by sameRule:
// for nodes of two grammars, e.g. references that compare by name.
func NodeEqualFunc(a, b *Node, sameRule func(x, y RuleID) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Op != b.Op || len(a.Subs) != len(b.Subs) {
		return false
	}
	switch a.Op {
	case OpLiteral:
		if !runesEqual(a.Runes, b.Runes) {
			return false
		}
	case OpClass:
		if a.Negated != b.Negated || !runesEqual(a.Ranges, b.Ranges) {
			return false
		}
	case OpRepeat:
		if a.Min != b.Min || a.Max != b.Max {
			return false
		}
	case OpRule:
		if !sameRule(a.Rule, b.Rule) {
			return false
		}
	case OpToken:
		if a.Negated != b.Negated || a.Token != b.Token || a.TokenText != b.TokenText {
			return false
		}
	}
	for i := range a.Subs {
		if !NodeEqualFunc(a.Subs[i], b.Subs[i], sameRule) {
			return false
		}
	}
	return true
}

func runesEqual(a, b []rune) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
