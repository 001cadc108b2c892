package gbnf

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// direct is the fast path of Parse: it reads the scanner's compact tokens
// straight into the IR, one pass, with the lowerer's own steps (declare,
// leaf, repeat, addPart/endSeq, addAlt/endAlts, finish) as each part is
// read, and no participle tokens or AST in between. Its grammar is the
// participle AST's (astRule, astItem.Parse, parseGroup, parseBraces),
// written out as recursive descent over the same token types.
//
// It handles valid grammars only. At the first thing that is not (a
// token the participle grammar does not expect there, an error from the
// lowering, a limit) it gives up, and Parse takes the participle path,
// which is the reference: it gives the error, with participle's error
// inside. So the direct parser never words an error; it only has to
// accept nothing that participle rejects and build what the participle
// path builds, positions included (TestDirectParser compares the two
// on the corpus and FuzzParse on every input).
//
// On the converter's large JSONSchemaBench grammars it is 6 to 8 times
// as fast as the participle path, with a quarter to a third of its bytes
// allocated and under 2% of its allocations (BenchmarkParseLarge).
type direct struct {
	s    *scanner
	l    *lowerer
	toks []ctok // s.toks
	i    int    // the next token
}

// parseDirect parses the scanner's tokens (which hold no lexical error)
// with root as the root rule; nil when it leaves the source to the
// participle path.
func parseDirect(s *scanner, root string) *Grammar {
	d := &direct{s: s, l: newLowerer(s), toks: s.toks}
	if !d.declareAll() {
		return nil
	}
	for d.peek() != lexer.EOF {
		if !d.rule() {
			return nil
		}
	}
	if len(d.l.rules) == 0 {
		return nil
	}
	g := d.l.finish(root)
	if len(d.l.errs.list) > 0 {
		return nil
	}
	return g
}

// declareAll gives the rules their ids before the bodies are read, so
// that a reference is resolved where it is read: in the order of their
// first definition, as the lowerer does. A rule starts the source or
// follows an EOL (in a source the direct parser reads, every EOL ends a
// rule).
func (d *direct) declareAll() bool {
	l, toks := d.l, d.toks
	l.ids = make(map[string]RuleID, d.s.defines)
	l.rules = make([]*Rule, 0, d.s.defines)
	for i := 0; i+1 < len(toks); i++ {
		if toks[i+1].Type() == tkDefine && toks[i].Type() == tkName && (i == 0 || toks[i-1].Type() == tkEOL) {
			if l.declare(d.text(i), Pos{}) == nil {
				return false
			}
		}
	}
	return true
}

func (d *direct) peek() lexer.TokenType { return d.toks[d.i].Type() }

// pos is the position of token i (asked for in increasing order).
func (d *direct) pos(i int) Pos { return d.s.linePos(int(d.toks[i].off)) }

// text is the source of token i.
func (d *direct) text(i int) string {
	t := d.toks[i]
	return d.s.src[t.off:t.end]
}

// rule reads name ::= alternatives, and the EOL after them (or stops
// before EOF), as astRule and parseRules do.
func (d *direct) rule() bool {
	l := d.l
	if d.peek() != tkName || d.toks[d.i+1].Type() != tkDefine {
		return false
	}
	p := d.pos(d.i)
	r := l.rules[l.ids[d.text(d.i)]] // declared by declareAll
	d.i += 2
	l.startBody()
	body, h := d.alts()
	// h bounds the depth the lowerer's alts and item check against
	// MaxDepth: the most repetitions and groups around any part.
	if body == nil || h > MaxDepth || !l.checkBody(body) {
		return false
	}
	// A later definition replaces an earlier one.
	r.Pos, r.Body = p, body
	switch d.peek() {
	case tkEOL:
		d.i++
	case lexer.EOF:
	default:
		return false
	}
	return true
}

// alts reads sequences separated by "|" (astAlts, parseGroup). h is
// its height: the most groups and repetitions nested in one another
// inside it.
func (d *direct) alts() (n *Node, h int) {
	l := d.l
	p := d.pos(d.i)
	base := len(l.stack)
	for k := 1; ; k++ {
		sq, hs := d.seq()
		if sq == nil {
			return nil, 0
		}
		l.addAlt(sq)
		h = max(h, hs)
		if d.peek() != tkPipe {
			return l.endAlts(base, p), h
		}
		if k >= participle.MaxIterations {
			return nil, 0 // participle's limit: its error
		}
		d.i++
	}
}

// seq reads items up to a token that does not start one (astSeq).
func (d *direct) seq() (n *Node, h int) {
	l := d.l
	p := d.pos(d.i)
	base := len(l.stack)
	for {
		switch d.peek() {
		case tkString, tkClass, tkDot, tkTokenRef, tkName, tkLParen:
		default:
			return l.endSeq(base, p), h
		}
		it, hi := d.item()
		if it == nil {
			return nil, 0
		}
		l.addPart(it)
		h = max(h, hi)
	}
}

// item reads an element and its postfix operators (astItem.Parse).
func (d *direct) item() (n *Node, h int) {
	l := d.l
	i := d.i
	d.i++
	if kind := d.toks[i].Type(); kind == tkLParen {
		n, h = d.alts()
		if n == nil || d.peek() != tkRParen {
			return nil, 0
		}
		d.i++
		h++
	} else if kind == tkName {
		// A reference to a rule that declareAll did not find is an
		// error of the lowerer's.
		id, ok := l.ids[d.text(i)]
		if !ok {
			return nil, 0
		}
		n = l.node(OpRule, d.pos(i))
		n.Rule = id
	} else {
		n = l.leaf(kind, d.pos(i), d.text(i))
	}
	for n != nil {
		op := d.i
		kind := d.peek()
		var lo, hi string
		comma := false
		switch kind {
		case tkStar, tkPlus, tkQuestion:
			d.i++
		case tkLBrace:
			d.i++
			if lo, hi, comma = d.braces(); lo == "" {
				return nil, 0
			}
		default:
			return n, h
		}
		n = l.repeat(n, kind, d.pos(op), lo, hi, comma)
		h++
	}
	return nil, 0
}

// braces reads the rest of {m}, {m,} or {m,n} after the "{"
// (parseBraces); lo is "" when it is not one of those.
func (d *direct) braces() (lo, hi string, comma bool) {
	if d.peek() != tkInt {
		return "", "", false
	}
	lo = d.text(d.i)
	d.i++
	if d.peek() == tkComma {
		d.i++
		comma = true
		if d.peek() == tkInt {
			hi = d.text(d.i)
			d.i++
		}
	}
	if d.peek() != tkRBrace {
		return "", "", false
	}
	d.i++
	return lo, hi, comma
}
