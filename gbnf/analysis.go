package gbnf

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// FirstSet is what can come first in a sentence of a rule or node: code
// points (the first character) and whether a token reference can come
// first. It says nothing about the empty sentence (see Nullable).
type FirstSet struct {
	Ranges []rune // normalized inclusive ranges of Unicode scalar values
	Token  bool   // a token reference (OpToken) can come first
}

// Contains reports whether code point r can come first.
func (f FirstSet) Contains(r rune) bool {
	for i := 0; i+1 < len(f.Ranges); i += 2 {
		if f.Ranges[i] <= r && r <= f.Ranges[i+1] {
			return true
		}
	}
	return false
}

// NoSentence is the MinLen of a rule or node that derives no finite
// sentence at all (e.g. `a ::= "x" a`, or a class that matches nothing).
const NoSentence = -1

// maxLen caps minimum lengths so that sums cannot overflow (a rule can
// have an astronomically long shortest sentence: a ::= b b, b ::= c c, ...).
const maxLen = 1 << 50

// Analysis holds per-rule facts about a grammar, indexed by RuleID:
//
//   - Nullable: the rule derives the empty string.
//   - First: what its sentences can start with.
//   - MinLen: the length in bytes of its shortest sentence, or NoSentence.
//     A token reference counts 0 bytes (its text depends on the
//     vocabulary). Lengths saturate at 2^50.
//   - Reachable: the root's derivations can use the rule.
//
// The Node* methods give the same facts for any node of the grammar.
// An Analysis is immutable after Analyze and safe for concurrent use.
type Analysis struct {
	g         *Grammar
	Nullable  []bool
	First     []FirstSet
	MinLen    []int
	Reachable []bool
}

// Analyze computes nullability, first sets, minimum lengths and
// reachability. It takes time linear in the grammar size times a small
// number of fixpoint rounds.
func (g *Grammar) Analyze() *Analysis {
	a := &Analysis{g: g}
	n := len(g.Rules)
	a.Nullable = make([]bool, n)
	a.First = make([]FirstSet, n)
	a.MinLen = make([]int, n)
	a.Reachable = make([]bool, n)
	users := g.users()
	order := g.postOrder()

	// Nullable: least fixpoint.
	fixpoint(order, users, func(id RuleID) bool {
		if a.Nullable[id] || !a.NodeNullable(g.Rules[id].Body) {
			return false
		}
		a.Nullable[id] = true
		return true
	})

	// MinLen: greatest fixpoint from "no sentence", values only go down.
	for i := range a.MinLen {
		a.MinLen[i] = NoSentence
	}
	fixpoint(order, users, func(id RuleID) bool {
		v := a.NodeMinLen(g.Rules[id].Body)
		if v == NoSentence || a.MinLen[id] != NoSentence && v >= a.MinLen[id] {
			return false
		}
		a.MinLen[id] = v
		return true
	})

	// First: least fixpoint, sets only grow.
	fixpoint(order, users, func(id RuleID) bool {
		f := a.NodeFirst(g.Rules[id].Body)
		old := a.First[id]
		if f.Token == old.Token && runesEqual(f.Ranges, old.Ranges) {
			return false
		}
		a.First[id] = FirstSet{Ranges: NormalizeRanges(append(append([]rune(nil), old.Ranges...), f.Ranges...)), Token: f.Token || old.Token}
		return true
	})

	// Reachable: from the root through rule references.
	if int(g.Root) < n && g.Root >= 0 {
		a.Reachable[g.Root] = true
		stack := []RuleID{g.Root}
		for len(stack) > 0 {
			id := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			walk(g.Rules[id].Body, func(x *Node) {
				if x.Op == OpRule && !a.Reachable[x.Rule] {
					a.Reachable[x.Rule] = true
					stack = append(stack, x.Rule)
				}
			})
		}
	}
	return a
}

// fixpoint evaluates every rule, callees first (order), and re-evaluates
// the users of a rule whose value changed (eval reports it), each user
// queued once however many of its callees change. Without recursion every
// rule is evaluated once: a wide rule (root ::= r0 | … | r65534) is not
// re-evaluated after each of its callees, which was quadratic.
func fixpoint(order []RuleID, users [][]RuleID, eval func(id RuleID) bool) {
	n := len(order)
	work := make([]RuleID, n) // a stack: order[0] on top
	queued := make([]bool, n)
	for i, id := range order {
		work[n-1-i] = id
		queued[id] = true
	}
	for len(work) > 0 {
		id := work[len(work)-1]
		work = work[:len(work)-1]
		queued[id] = false
		if !eval(id) {
			continue
		}
		for _, u := range users[id] {
			if !queued[u] {
				queued[u] = true
				work = append(work, u)
			}
		}
	}
}

// postOrder returns every rule once, each after the rules it references
// (except along recursion).
func (g *Grammar) postOrder() []RuleID {
	n := len(g.Rules)
	seen := make([]bool, n)
	out := make([]RuleID, 0, n)
	var visit func(id RuleID)
	visit = func(id RuleID) {
		seen[id] = true
		walk(g.Rules[id].Body, func(x *Node) {
			if x.Op == OpRule && int(x.Rule) < n && x.Rule >= 0 && !seen[x.Rule] {
				visit(x.Rule)
			}
		})
		out = append(out, id)
	}
	for id := range n {
		if !seen[id] {
			visit(RuleID(id))
		}
	}
	return out
}

// users returns, per rule, the rules whose bodies reference it.
func (g *Grammar) users() [][]RuleID {
	u := make([][]RuleID, len(g.Rules))
	for _, r := range g.Rules {
		seen := map[RuleID]bool{}
		walk(r.Body, func(x *Node) {
			if x.Op == OpRule && !seen[x.Rule] {
				seen[x.Rule] = true
				u[x.Rule] = append(u[x.Rule], r.ID)
			}
		})
	}
	return u
}

// walk calls f on n and all nodes below it (not through rule references).
func walk(n *Node, f func(*Node)) {
	if n == nil {
		return
	}
	f(n)
	for _, s := range n.Subs {
		walk(s, f)
	}
}

// classEmpty reports whether a class node matches no code point.
func classEmpty(n *Node) bool {
	if n.Negated {
		return len(ComplementRanges(n.Ranges)) == 0
	}
	return len(n.Ranges) == 0
}

// NodeNullable reports whether n derives the empty string.
func (a *Analysis) NodeNullable(n *Node) bool {
	switch n.Op {
	case OpEmpty:
		return true
	case OpLiteral, OpClass, OpToken:
		return false
	case OpSeq:
		for _, s := range n.Subs {
			if !a.NodeNullable(s) {
				return false
			}
		}
		return true
	case OpAlt:
		for _, s := range n.Subs {
			if a.NodeNullable(s) {
				return true
			}
		}
		return false
	case OpRepeat:
		return n.Min == 0 || a.NodeNullable(n.Subs[0])
	case OpRule:
		return a.Nullable[n.Rule]
	}
	return false
}

// NodeMinLen returns the length in bytes of the shortest sentence of n,
// or NoSentence.
func (a *Analysis) NodeMinLen(n *Node) int {
	switch n.Op {
	case OpEmpty, OpToken:
		return 0
	case OpLiteral:
		l := 0
		for _, r := range n.Runes {
			l += utf8.RuneLen(r)
		}
		return l
	case OpClass:
		rs := n.Ranges
		if n.Negated {
			rs = ComplementRanges(rs)
		}
		if len(rs) == 0 {
			return NoSentence
		}
		return utf8.RuneLen(rs[0])
	case OpSeq:
		sum := 0
		for _, s := range n.Subs {
			v := a.NodeMinLen(s)
			if v == NoSentence {
				return NoSentence
			}
			sum = min(sum+v, maxLen)
		}
		return sum
	case OpAlt:
		best := NoSentence
		for _, s := range n.Subs {
			v := a.NodeMinLen(s)
			if v != NoSentence && (best == NoSentence || v < best) {
				best = v
			}
		}
		return best
	case OpRepeat:
		if n.Min == 0 {
			return 0
		}
		v := a.NodeMinLen(n.Subs[0])
		if v == NoSentence {
			return NoSentence
		}
		if v > 0 && n.Min > maxLen/v {
			return maxLen
		}
		return min(v*n.Min, maxLen)
	case OpRule:
		return a.MinLen[n.Rule]
	}
	return NoSentence
}

// NodeFirst returns what sentences of n can start with.
func (a *Analysis) NodeFirst(n *Node) FirstSet {
	var f FirstSet
	a.addFirst(&f, n)
	f.Ranges = NormalizeRanges(f.Ranges)
	return f
}

func (a *Analysis) addFirst(f *FirstSet, n *Node) {
	switch n.Op {
	case OpLiteral:
		f.Ranges = append(f.Ranges, n.Runes[0], n.Runes[0])
	case OpClass:
		if n.Negated {
			f.Ranges = append(f.Ranges, ComplementRanges(n.Ranges)...)
		} else {
			f.Ranges = append(f.Ranges, n.Ranges...)
		}
	case OpToken:
		f.Token = true
	case OpSeq:
		for _, s := range n.Subs {
			a.addFirst(f, s)
			if !a.NodeNullable(s) {
				break
			}
		}
	case OpAlt:
		for _, s := range n.Subs {
			a.addFirst(f, s)
		}
	case OpRepeat:
		if n.Max != 0 {
			a.addFirst(f, n.Subs[0])
		}
	case OpRule:
		rf := a.First[n.Rule]
		f.Ranges = append(f.Ranges, rf.Ranges...)
		f.Token = f.Token || rf.Token
	}
}

// leftCorners calls f for every rule reference that can be the first
// thing n derives (after a nullable prefix).
func (a *Analysis) leftCorners(n *Node, f func(*Node)) {
	switch n.Op {
	case OpRule:
		f(n)
	case OpSeq:
		for _, s := range n.Subs {
			a.leftCorners(s, f)
			if !a.NodeNullable(s) {
				return
			}
		}
	case OpAlt:
		for _, s := range n.Subs {
			a.leftCorners(s, f)
		}
	case OpRepeat:
		if n.Max != 0 {
			a.leftCorners(n.Subs[0], f)
		}
	}
}

// LeftRecursion returns nil if no rule of g can derive a sentential form
// that starts with itself; otherwise an *Error at the first such rule
// naming the cycle, e.g. "left recursion: expr -> term -> expr". The
// cycle may be direct (a ::= a "x"), indirect, or through a nullable
// prefix (a ::= b a, b ::= ""), as in llama.cpp's check. All rules are
// checked, reachable or not. Parse does not call it: whether left
// recursion is an error is the consumer's decision (llama.cpp rejects it).
func (g *Grammar) LeftRecursion() error {
	a := g.Analyze()
	n := len(g.Rules)
	edges := make([][]RuleID, n)
	for _, r := range g.Rules {
		seen := map[RuleID]bool{}
		a.leftCorners(r.Body, func(x *Node) {
			if !seen[x.Rule] {
				seen[x.Rule] = true
				edges[r.ID] = append(edges[r.ID], x.Rule)
			}
		})
	}
	const (
		white = iota
		grey
		black
	)
	color := make([]int, n)
	var stack []RuleID
	var cycle []RuleID
	var visit func(id RuleID) bool
	visit = func(id RuleID) bool {
		color[id] = grey
		stack = append(stack, id)
		for _, to := range edges[id] {
			switch color[to] {
			case grey:
				for i, s := range stack {
					if s == to {
						cycle = append(append([]RuleID(nil), stack[i:]...), to)
						return true
					}
				}
			case white:
				if visit(to) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
		return false
	}
	for id := range g.Rules {
		if color[id] == white && visit(RuleID(id)) {
			names := make([]string, len(cycle))
			for i, c := range cycle {
				names[i] = g.Rules[c].Name
			}
			return &Error{Pos: g.Rules[cycle[0]].Pos, Msg: fmt.Sprintf("left recursion: %s", strings.Join(names, " -> "))}
		}
	}
	return nil
}
