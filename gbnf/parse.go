package gbnf

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The participle AST. Field names are exported for participle; the types
// are not. Positions come from the tokens.

// The source is parsed one rule at a time (the scanner's EOL tokens split
// it), which keeps participle's bookkeeping per rule: parsing a whole file
// at once is about twice as slow on large grammars.
type astGrammar struct {
	Rules []*astRule
}

// astRule is one rule and the newline that ends it (none at the end of
// the source).
type astRule struct {
	Pos  lexer.Position
	Name string   `parser:"@Name Define"`
	Body *astAlts `parser:"@@ EOL?"`
}

type astAlts struct {
	Pos  lexer.Position
	Seqs []*astSeq `parser:"@@ ( Pipe @@ )*"`
}

type astSeq struct {
	Pos   lexer.Position
	Items []*astItem `parser:"@@*"`
}

type astItem struct {
	Pos     lexer.Position
	Primary *astPrimary   `parser:"@@"`
	Post    []*astPostfix `parser:"@@*"`
}

type astPrimary struct {
	Pos     lexer.Position
	Literal *string  `parser:"(  @String"`
	Class   *string  `parser:" | @Class"`
	Dot     bool     `parser:" | @Dot"`
	Token   *string  `parser:" | @TokenRef"`
	Name    *string  `parser:" | @Name"`
	Group   *astAlts `parser:" | LParen @@ RParen )"`
}

type astPostfix struct {
	Pos      lexer.Position
	Star     bool    `parser:"(  @Star"`
	Plus     bool    `parser:" | @Plus"`
	Question bool    `parser:" | @Question"`
	Min      *string `parser:" | LBrace @Int"`
	Comma    bool    `parser:"   ( @Comma"`
	Max      *string `parser:"     @Int? )? RBrace )"`
}

var astParser = participle.MustBuild[astRule](
	participle.Lexer(lexDef{}),
	participle.UseLookahead(1),
)

// parseRules runs the participle parser on each rule's tokens: the tokens
// up to and including an EOL, then an EOF.
func (s *scanner) parseRules() (*astGrammar, error) {
	ast := &astGrammar{}
	toks := s.toks
	for len(toks) > 0 && toks[0].Type != lexer.EOF {
		end := 0
		for end < len(toks) && toks[end].Type != tkEOL && toks[end].Type != lexer.EOF {
			end++
		}
		var chunk []lexer.Token
		if toks[end].Type == tkEOL {
			eol := toks[end]
			chunk = append(toks[:end+1:end+1], lexer.EOFToken(lexer.Position{Offset: eol.Pos.Offset + 1, Line: eol.Pos.Line + 1, Column: 1}))
			toks = toks[end+1:]
		} else {
			chunk = toks[:end+1]
			toks = toks[end+1:]
		}
		peek, err := lexer.Upgrade(&sliceLexer{toks: chunk})
		if err != nil {
			return nil, err
		}
		r, err := astParser.ParseFromLexer(peek)
		if err != nil {
			return nil, err
		}
		ast.Rules = append(ast.Rules, r)
	}
	return ast, nil
}

// Parse parses llama.cpp GBNF source with "root" as the root rule.
// Errors are an ErrorList of *Error, each printing "line:col: msg".
func Parse(src string) (*Grammar, error) {
	return ParseWithRoot(src, "root")
}

// ParseWithRoot parses GBNF source with the named rule as the root.
func ParseWithRoot(src, root string) (*Grammar, error) {
	if len(src) > MaxSourceBytes {
		return nil, ErrorList{{Pos: Pos{Line: 1, Col: 1}, Msg: fmt.Sprintf("grammar is %d bytes, over the limit of %d (MaxSourceBytes)", len(src), MaxSourceBytes)}}
	}
	s := newScanner(src)
	if len(src) > 0 {
		s.run()
	} else {
		s.toks = append(s.toks, lexer.EOFToken(s.lexPos(0)))
	}
	if s.fatal != nil {
		return nil, ErrorList{s.fatal}
	}
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
	l := &lowerer{s: s}
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
	// Find the previous token to say what the parser was doing.
	prev := lexer.Token{}
	for i, tk := range s.toks {
		if tk.Pos.Offset >= t.Pos.Offset {
			if i > 0 {
				prev = s.toks[i-1]
			}
			break
		}
	}
	switch {
	case prev.Type == tkLBrace:
		return fmt.Sprintf("unexpected %s in repetition (expected a number)", what)
	case prev.Type == tkComma:
		return fmt.Sprintf("unexpected %s in repetition (expected a number or \"}\")", what)
	case prev.Type == tkInt:
		return fmt.Sprintf("unexpected %s in repetition (expected \",\" or \"}\")", what)
	case prev.Type == tkEOL || prev.Type == 0:
		if t.Type == tkPipe {
			return fmt.Sprintf("unexpected %s at the start of a line (an alternative continues on the next line only after a trailing \"|\", or inside parentheses)", what)
		}
		return fmt.Sprintf("unexpected %s (expected a rule: name ::= ...)", what)
	case prev.Type == tkName && t.Type != tkDefine && s.ruleStart(prev):
		return fmt.Sprintf("unexpected %s (expected ::= after the rule name)", what)
	case t.Type == tkDefine:
		return fmt.Sprintf("unexpected %s (a rule must start on a new line)", what)
	case t.Type == tkRParen:
		return fmt.Sprintf("unexpected %s (no open parenthesis)", what)
	case t.Type == lexer.EOF && s.depth > 0:
		return fmt.Sprintf("unexpected %s (unclosed parenthesis)", what)
	case t.Type == tkEOL && s.openParenBefore(t.Pos.Offset):
		return fmt.Sprintf("unexpected %s", what)
	case t.Type == tkStar || t.Type == tkPlus || t.Type == tkQuestion || t.Type == tkLBrace:
		return fmt.Sprintf("unexpected %s (a repetition needs an element before it)", what)
	}
	return fmt.Sprintf("unexpected %s (expected an element, \"|\", or the end of the rule)", what)
}

// ruleStart reports whether name token t starts a line (a rule head).
func (s *scanner) ruleStart(t lexer.Token) bool {
	for i, tk := range s.toks {
		if tk.Pos.Offset == t.Pos.Offset {
			return i == 0 || s.toks[i-1].Type == tkEOL
		}
	}
	return false
}

func (s *scanner) openParenBefore(off int) bool {
	d := 0
	for _, tk := range s.toks {
		if tk.Pos.Offset >= off {
			break
		}
		switch tk.Type {
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
		if s.toks[i].Type != tkDefine || s.toks[i-1].Type != tkName {
			continue
		}
		names[s.toks[i-1].Value] = true
		if len(names) > MaxRules {
			return &Error{Pos: s.posAt(s.toks[i-1].Pos.Offset), Msg: fmt.Sprintf("more than %d rules (MaxRules)", MaxRules)}
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
