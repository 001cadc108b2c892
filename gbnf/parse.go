package gbnf

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The participle AST. Field names are exported for participle; the types
// are not. Positions come from the tokens.
//
// This grammar is the definition of GBNF's syntax here, and its path
// (participle, then the lowering of the AST) is the reference: Parse
// reads a valid grammar with the direct parser (direct.go), which
// follows this grammar token for token and is checked against this path
// (TestDirectParser, FuzzParse), and leaves everything else, so every
// error, to this path.

// The source is parsed one rule at a time (the scanner's EOL tokens end
// a rule), which keeps participle's bookkeeping per rule: parsing a whole
// file at once is about twice as slow on large grammars.
type astGrammar struct {
	Rules []*astRule
}

// astRule is one rule. participle reads the alternatives of its body
// into Seqs (one struct less per rule than an astAlts of its own: about
// 10% fewer allocations), and parseRules makes them its Body; the EOL
// that ends the rule is parseRules' too.
type astRule struct {
	Pos  lexer.Position
	Name string    `parser:"@Name Define"`
	Seqs []*astSeq `parser:"@@ ( Pipe @@ )*"`
	Body *astAlts
}

type astAlts struct {
	Pos  lexer.Position
	Seqs []*astSeq `parser:"@@ ( Pipe @@ )*"`
}

// astSeq is a sequence of items, possibly empty. It parses itself, like
// astItem.
type astSeq struct {
	Pos   lexer.Position
	Items []astItem
}

// Parse reads items until a token that does not start one.
func (sq *astSeq) Parse(lex *lexer.PeekingLexer) error {
	sq.Pos = lex.Peek().Pos
	for {
		var it astItem
		if err := it.Parse(lex); err == participle.NextMatch {
			return nil
		} else if err != nil {
			return err
		}
		sq.Items = append(sq.Items, it)
	}
}

// astItem is one element and its repetition operators. It parses
// itself (participle's Parseable): an element is one token or a group,
// and reading those directly, instead of letting participle try each
// alternative of astPrimary and astPostfix on a branch of its own (every
// element cost a failed postfix branch), made Parse 2.3 times faster on
// the grammars of the large JSONSchemaBench schemas (0.49 → 0.21 µs per
// byte, together with astSeq). Groups are read by parseGroup, which
// returns here for their items. The parts are values, not pointers: one
// allocation less per part.
type astItem struct {
	Primary astPrimary
	Post    []astPostfix
}

// astPrimary is an element: a token (Kind: tkString, tkClass, tkDot,
// tkTokenRef or tkName, whose source is Text; literals, classes and
// token references are decoded from it when lowering) or a group (Kind
// tkLParen).
type astPrimary struct {
	Pos   lexer.Position
	Kind  lexer.TokenType
	Text  string
	Group *astAlts
}

// astPostfix is a repetition operator: Kind tkStar, tkPlus, tkQuestion,
// or tkLBrace for {Min}, {Min,} (Comma) or {Min,Max} (Max not empty).
type astPostfix struct {
	Pos      lexer.Position
	Kind     lexer.TokenType
	Min, Max string
	Comma    bool
}

// Parse reads an element and its postfix operators; participle.NextMatch
// when the next token does not start an element (the sequence ends).
// Errors are participle's, so that syntaxError words them as before.
func (it *astItem) Parse(lex *lexer.PeekingLexer) error {
	t := lex.Peek()
	pr := &it.Primary
	pr.Pos, pr.Kind = t.Pos, t.Type
	switch t.Type {
	case tkString, tkClass, tkDot, tkTokenRef, tkName:
		pr.Text = lex.Next().Value
	case tkLParen:
		lex.Next()
		g, err := parseGroup(lex)
		if err != nil {
			return err
		}
		if r := lex.Peek(); r.Type != tkRParen {
			return &participle.UnexpectedTokenError{Unexpected: *r}
		}
		lex.Next()
		pr.Group = g
	default:
		return participle.NextMatch
	}
	for {
		t := lex.Peek()
		pf := astPostfix{Pos: t.Pos, Kind: t.Type}
		switch t.Type {
		case tkStar, tkPlus, tkQuestion:
			lex.Next()
		case tkLBrace:
			lex.Next()
			if err := parseBraces(lex, &pf); err != nil {
				return err
			}
		default:
			return nil
		}
		it.Post = append(it.Post, pf)
	}
}

// parseBraces reads the rest of {m}, {m,} or {m,n} after the "{".
func parseBraces(lex *lexer.PeekingLexer, pf *astPostfix) error {
	expect := func(tt lexer.TokenType) (*lexer.Token, error) {
		t := lex.Peek()
		if t.Type != tt {
			return nil, &participle.UnexpectedTokenError{Unexpected: *t}
		}
		return lex.Next(), nil
	}
	lo, err := expect(tkInt)
	if err != nil {
		return err
	}
	pf.Min = lo.Value
	if lex.Peek().Type == tkComma {
		lex.Next()
		pf.Comma = true
		if lex.Peek().Type == tkInt {
			pf.Max = lex.Next().Value
		}
	}
	_, err = expect(tkRBrace)
	return err
}

var astParser = participle.MustBuild[astRule](
	participle.Lexer(lexDef{}),
	participle.UseLookahead(1),
)

// parseGroup reads the alternatives inside parentheses, after the "(",
// as participle's astAlts grammar does (a sequence, then "|" and a
// sequence while a "|" follows; an error from a sequence is returned as
// it is, since it always comes after the branch's lookahead), only without
// participle's reflection and branch copies: on the grammars of the
// JSONSchemaBench corpus groups are most of the alternatives. The one
// participle behaviour it does not repeat, its limit of MaxIterations
// repetitions of ( "|" astSeq ), it leaves to groupParser, which gives
// participle's error.
func parseGroup(lex *lexer.PeekingLexer) (*astAlts, error) {
	start := lex.MakeCheckpoint()
	g := &astAlts{Pos: lex.Peek().Pos}
	for {
		sq := &astSeq{}
		if err := sq.Parse(lex); err != nil {
			return nil, err
		}
		g.Seqs = append(g.Seqs, sq)
		if lex.Peek().Type != tkPipe {
			return g, nil
		}
		if len(g.Seqs) >= participle.MaxIterations {
			lex.LoadCheckpoint(start)
			return groupParser.ParseFromLexer(lex, allowTrailing)
		}
		lex.Next()
	}
}

// groupParser parses the alternatives inside parentheses when parseGroup
// leaves them to participle.
var groupParser = participle.MustBuild[astAlts](
	participle.Lexer(lexDef{}),
	participle.UseLookahead(1),
)

// parseRules runs the participle parser once per rule. Each rule is its
// tokens up to an EOL (none at the end of the source), which it consumes;
// a rule that ends at neither an EOL nor the end is the error participle
// reports for trailing tokens: the next token is unexpected.
//
// participle reads tokens from a PeekingLexer, which lexer.Upgrade fills
// by appending one token at a time. One for the whole source would grow a
// slice of megabytes by a quarter at a time (copying it about five times
// over: a quarter of Parse's instructions on a 1 MB grammar); so each
// PeekingLexer holds a few whole rules (chunkTokens tokens or more), and
// ends with an EOF just after the last rule's EOL.
func (s *scanner) parseRules() (*astGrammar, error) {
	ast := &astGrammar{}
	for i := 0; i < len(s.toks) && !s.toks[i].isEOF(); {
		j := min(i+chunkTokens, len(s.toks)-1)
		for s.toks[j-1].Type() != tkEOL && !s.toks[j].isEOF() {
			j++
		}
		if s.toks[j].isEOF() {
			j++ // the source's EOF ends the last chunk
		}
		peek, err := lexer.Upgrade(&chunkLexer{s: s, i: i, end: j})
		if err != nil {
			return nil, err
		}
		i = j
		for !peek.Peek().EOF() {
			r, err := astParser.ParseFromLexer(peek, allowTrailing)
			if err != nil {
				return nil, err
			}
			// the body starts where its first sequence does
			r.Body = &astAlts{Pos: r.Seqs[0].Pos, Seqs: r.Seqs}
			ast.Rules = append(ast.Rules, r)
			switch t := peek.Peek(); t.Type {
			case tkEOL:
				peek.Next()
			case lexer.EOF:
			default:
				return nil, &participle.UnexpectedTokenError{Unexpected: *t}
			}
		}
	}
	return ast, nil
}

// chunkTokens is about how many tokens a PeekingLexer holds (see
// parseRules): append doubles a slice this small as it grows.
const chunkTokens = 256

// chunkLexer hands participle the tokens toks[i:end] and then EOF: the
// source's, or one just after the chunk's last EOL.
type chunkLexer struct {
	s      *scanner
	i, end int
}

func (l *chunkLexer) Next() (lexer.Token, error) {
	if l.i < l.end {
		l.i++
		return l.s.token(l.i - 1), nil
	}
	eol := l.s.posAt(int(l.s.toks[l.end-1].off))
	return lexer.EOFToken(lexer.Position{Offset: eol.Offset + 1, Line: eol.Line + 1, Column: 1}), nil
}

var allowTrailing = participle.AllowTrailing(true)

// Parse parses llama.cpp GBNF source with "root" as the root rule.
// Errors are an ErrorList of *Error, each printing "line:col: msg".
func Parse(src string) (*Grammar, error) {
	return ParseWithRoot(src, "root")
}

// ParseWithRoot parses GBNF source with the named rule as the root.
//
// A source without a lexical error is first read by the direct parser
// (direct.go); what it leaves (every invalid grammar, and grammars at a
// limit of participle's) goes through participle, the lowering of its AST,
// and their errors.
func ParseWithRoot(src, root string) (*Grammar, error) {
	s, err := scan(src)
	if err != nil {
		return nil, err
	}
	if s.invalid == nil {
		if g := parseDirect(s, root); g != nil {
			return g, nil
		}
	}
	return s.parseParticiple(root)
}

// scan runs the scanner on src; an error when src is over a limit.
func scan(src string) (*scanner, error) {
	if len(src) > MaxSourceBytes {
		return nil, ErrorList{{Pos: Pos{Line: 1, Col: 1}, Msg: fmt.Sprintf("grammar is %d bytes, over the limit of %d (MaxSourceBytes)", len(src), MaxSourceBytes)}}
	}
	s := newScanner(src)
	s.run()
	if s.fatal != nil {
		return nil, ErrorList{s.fatal}
	}
	return s, nil
}

// parseParticiple parses the scanner's tokens with participle and lowers
// the AST: the reference path, and the one that words the errors.
func (s *scanner) parseParticiple(root string) (*Grammar, error) {
	if e := s.countRules(); e != nil {
		return nil, ErrorList{e}
	}
	ast, err := s.parseRules()
	if err != nil {
		return nil, ErrorList{s.syntaxError(err)}
	}
	if s.invalid != nil {
		// The parser stops at the invalid token at the latest.
		return nil, ErrorList{s.invalid}
	}
	l := newLowerer(s)
	g := l.lower(ast, root)
	if err := l.errs.err(); err != nil {
		return nil, err
	}
	return g, nil
}

// syntaxError turns a participle error into an *Error at the same
// position. An error at (or after) a lexical error is that error.
func (s *scanner) syntaxError(err error) *Error {
	var perr participle.Error
	if !errors.As(err, &perr) {
		return &Error{Pos: Pos{Line: 1, Col: 1}, Msg: err.Error()}
	}
	lp := perr.Position()
	if s.invalid != nil && lp.Offset >= s.invalid.Pos.Offset {
		return s.invalid
	}
	pos := s.posAt(lp.Offset)
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		return &Error{Pos: pos, Msg: s.unexpected(ute), cause: err}
	}
	return &Error{Pos: pos, Msg: perr.Message(), cause: err}
}

// unexpected words an unexpected-token error in GBNF terms.
func (s *scanner) unexpected(ute *participle.UnexpectedTokenError) string {
	t := ute.Unexpected
	what := describe(t)
	// The token before it says what the parser was doing. (Over the
	// scanner's compact tokens: their offsets increase.)
	i := sort.Search(len(s.toks), func(i int) bool { return int(s.toks[i].off) >= t.Pos.Offset })
	var prev lexer.TokenType
	if 0 < i && i < len(s.toks) {
		prev = s.toks[i-1].Type()
	}
	// prev is a rule head: first, or after an EOL.
	ruleStart := i == 1 || i > 1 && s.toks[i-2].Type() == tkEOL
	switch {
	case prev == tkLBrace:
		return fmt.Sprintf("unexpected %s in repetition (expected a number)", what)
	case prev == tkComma:
		return fmt.Sprintf("unexpected %s in repetition (expected a number or \"}\")", what)
	case prev == tkInt:
		return fmt.Sprintf("unexpected %s in repetition (expected \",\" or \"}\")", what)
	case prev == tkEOL || prev == 0:
		if t.Type == tkPipe {
			return fmt.Sprintf("unexpected %s at the start of a line (an alternative continues on the next line only after a trailing \"|\", or inside parentheses)", what)
		}
		return fmt.Sprintf("unexpected %s (expected a rule: name ::= ...)", what)
	case prev == tkName && t.Type != tkDefine && ruleStart:
		return fmt.Sprintf("unexpected %s (expected ::= after the rule name)", what)
	case t.Type == tkDefine:
		return fmt.Sprintf("unexpected %s (a rule must start on a new line)", what)
	case t.Type == tkRParen:
		return fmt.Sprintf("unexpected %s (no open parenthesis)", what)
	case t.Type == lexer.EOF && s.depth > 0:
		return fmt.Sprintf("unexpected %s (unclosed parenthesis)", what)
	case t.Type == tkEOL && openParen(s.toks[:i]):
		return fmt.Sprintf("unexpected %s", what)
	case t.Type == tkStar || t.Type == tkPlus || t.Type == tkQuestion || t.Type == tkLBrace:
		return fmt.Sprintf("unexpected %s (a repetition needs an element before it)", what)
	}
	return fmt.Sprintf("unexpected %s (expected an element, \"|\", or the end of the rule)", what)
}

// openParen reports whether toks leave a parenthesis open.
func openParen(toks []ctok) bool {
	d := 0
	for _, tk := range toks {
		switch tk.Type() {
		case tkLParen:
			d++
		case tkRParen:
			if d > 0 {
				d--
			}
		}
	}
	return d > 0
}

// countRules enforces MaxRules on the token stream, before the parser
// spends time on a grammar that is too large anyway: a rule head is a name
// followed by "::=".
func (s *scanner) countRules() *Error {
	names := map[string]bool{}
	for i := 1; i < len(s.toks); i++ {
		name := s.toks[i-1]
		if s.toks[i].Type() != tkDefine || name.Type() != tkName {
			continue
		}
		names[s.src[name.off:name.end]] = true
		if len(names) > MaxRules {
			return &Error{Pos: s.posAt(int(name.off)), Msg: fmt.Sprintf("more than %d rules (MaxRules)", MaxRules)}
		}
	}
	return nil
}

// parseBound parses the digits of a repetition bound.
func parseBound(digits string) (int, bool) {
	if len(digits) > 9 {
		return 0, false
	}
	v, err := strconv.Atoi(digits)
	if err != nil || v > MaxRepeat {
		return 0, false
	}
	return v, true
}
