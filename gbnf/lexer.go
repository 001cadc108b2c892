package gbnf

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types of the GBNF lexer.
const (
	tkName     lexer.TokenType = iota + 1 // rule name: [a-zA-Z0-9-]+
	tkDefine                              // ::=
	tkPipe                                // |
	tkLParen                              // (
	tkRParen                              // )
	tkString                              // "..."
	tkClass                               // [...]
	tkDot                                 // .
	tkStar                                // *
	tkPlus                                // +
	tkQuestion                            // ?
	tkLBrace                              // {
	tkRBrace                              // }
	tkComma                               // ,
	tkInt                                 // digits inside {...}
	tkTokenRef                            // <[id]> <|text|> !<[id]> !<|text|>
	tkEOL                                 // a newline that ends a rule
	tkInvalid                             // a lexical error; Value is the message
)

var symbols = map[string]lexer.TokenType{
	"EOF":      lexer.EOF,
	"Name":     tkName,
	"Define":   tkDefine,
	"Pipe":     tkPipe,
	"LParen":   tkLParen,
	"RParen":   tkRParen,
	"String":   tkString,
	"Class":    tkClass,
	"Dot":      tkDot,
	"Star":     tkStar,
	"Plus":     tkPlus,
	"Question": tkQuestion,
	"LBrace":   tkLBrace,
	"RBrace":   tkRBrace,
	"Comma":    tkComma,
	"Int":      tkInt,
	"TokenRef": tkTokenRef,
	"EOL":      tkEOL,
	"Invalid":  tkInvalid,
}

// describe names a token for error messages.
func describe(t lexer.Token) string {
	switch t.Type {
	case lexer.EOF:
		return "end of input"
	case tkEOL:
		return "newline"
	case tkName:
		return fmt.Sprintf("name %q", t.Value)
	case tkString:
		return "string literal " + t.Value
	case tkClass:
		return "character class " + t.Value
	case tkInt:
		return "number " + t.Value
	case tkTokenRef:
		return "token reference " + t.Value
	}
	return strconv.Quote(t.Value)
}

// litChar is one code point of a string literal or class, with the source
// offset where it (or its escape) starts.
type litChar struct {
	r   rune
	off int
}

// classItem is one member of a character class: a char or a range.
type classItem struct {
	lo, hi  litChar
	isRange bool
}

type tokenRef struct {
	negated bool
	byText  bool
	id      int64
	text    string
}

// scanner is the GBNF lexer. It reads the whole source up front, so that
// the newline rules and the nesting limit are applied before the
// (recursive) parsers run. It checks literals, classes and token
// references; the lowering decodes them again from the token's text
// (decoding is cheaper than keeping the results).
//
// Newlines: llama.cpp ends a rule at a newline, except inside parentheses
// and right after "::=" or "|" (and between rules, where blank lines are
// free). The scanner emits a tkEOL token only for a newline that is
// significant by these rules, collapses runs of them, and drops leading
// and trailing ones.
type scanner struct {
	src    string
	pos    int
	depth  int  // open parentheses
	braces bool // inside {...}: digits lex as tkInt

	// toks are the tokens, EOF last, in compact form: no pointers for
	// the collector to scan, and a fifth of lexer.Token's size. The
	// direct parser reads them as they are; parseRules turns them into
	// lexer.Tokens for participle a few rules at a time.
	toks []ctok

	lineStarts []int
	line       int // linePos: the line of the last position asked for
	defines    int // "::=" tokens: about how many rules

	// fatal is set when scanning stopped at a limit (nesting depth):
	// the parser must not run at all.
	fatal *Error
	// invalid is set when scanning stopped at a lexical error; the
	// token stream ends with a tkInvalid token there.
	invalid *Error
}

func newScanner(src string) *scanner {
	s := &scanner{
		src:  src,
		line: 1,
	}
	s.lineStarts = append(make([]int, 0, strings.Count(src, "\n")+1), 0)
	for i := 0; ; {
		j := strings.IndexByte(src[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		s.lineStarts = append(s.lineStarts, i)
	}
	return s
}

// posAt converts a byte offset into a Pos.
func (s *scanner) posAt(off int) Pos {
	line := sort.Search(len(s.lineStarts), func(i int) bool { return s.lineStarts[i] > off })
	return Pos{Offset: off, Line: line, Col: off - s.lineStarts[line-1] + 1}
}

// linePos is posAt for offsets asked for in increasing order (the
// tokens): it moves a line cursor forward instead of searching.
func (s *scanner) linePos(off int) Pos {
	if off < s.lineStarts[s.line-1] {
		s.line = 1
	}
	for s.line < len(s.lineStarts) && s.lineStarts[s.line] <= off {
		s.line++
	}
	return Pos{Offset: off, Line: s.line, Col: off - s.lineStarts[s.line-1] + 1}
}

// ctok is a token in compact form: its type and its source span.
type ctok struct {
	off, end int32 // MaxSourceBytes fits
	typ      int8  // lexer.TokenType
}

func (s *scanner) emit(t lexer.TokenType, start, end int) {
	s.toks = append(s.toks, ctok{off: int32(start), end: int32(end), typ: int8(t)})
}

func (s *scanner) lastType() lexer.TokenType {
	if len(s.toks) == 0 {
		return 0
	}
	return s.toks[len(s.toks)-1].Type()
}

func (t ctok) Type() lexer.TokenType { return lexer.TokenType(t.typ) }

func (t ctok) isEOF() bool { return t.typ == int8(lexer.EOF) }

// token returns toks[i] as participle's lexer.Token.
func (s *scanner) token(i int) lexer.Token {
	t := s.toks[i]
	p := s.linePos(int(t.off))
	tok := lexer.Token{Type: t.Type(), Pos: lexer.Position{Offset: p.Offset, Line: p.Line, Column: p.Col}}
	switch tok.Type {
	case lexer.EOF:
	case tkEOL:
		tok.Value = "\n"
	case tkInvalid:
		tok.Value = s.invalid.Msg
	default:
		tok.Value = s.src[t.off:t.end]
	}
	return tok
}

// lexErr stops scanning with a lexical error at off.
type lexErr struct {
	off int
	msg string
}

func errAt(off int, format string, args ...any) *lexErr {
	return &lexErr{off: off, msg: fmt.Sprintf(format, args...)}
}

func isWordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// run scans the whole source into toks. After a lexical error they end
// with a tkInvalid token and EOF; after a limit (fatal) the parser must
// not run.
func (s *scanner) run() {
	s.toks = make([]ctok, 0, len(s.src)/4+1)
	for s.pos < len(s.src) {
		if c := s.src[s.pos]; c == ' ' || c == '\t' { // blanks
			s.pos++
			continue
		}
		if le := s.next(); le != nil {
			if s.fatal == nil {
				s.invalid = &Error{Pos: s.posAt(le.off), Msg: le.msg}
				s.emit(tkInvalid, le.off, le.off)
			}
			break
		}
	}
	if s.lastType() == tkEOL {
		s.toks = s.toks[:len(s.toks)-1]
	}
	s.emit(lexer.EOF, len(s.src), len(s.src))
}

// next scans one token, comment or newline (run skips the blanks
// between tokens itself).
func (s *scanner) next() *lexErr {
	src := s.src
	start := s.pos
	c := src[start]
	switch c {
	case '#':
		for s.pos < len(src) && src[s.pos] != '\n' && src[s.pos] != '\r' {
			r, size := utf8.DecodeRuneInString(src[s.pos:])
			if r == 0 {
				return errAt(s.pos, "NUL byte in grammar")
			}
			if r == utf8.RuneError && size <= 1 {
				return errAt(s.pos, "invalid UTF-8 byte 0x%02X", src[s.pos])
			}
			s.pos += size
		}
	case '\n', '\r':
		s.pos++
		switch s.lastType() {
		case 0, tkEOL, tkDefine, tkPipe:
			// leading, repeated, or after ::= or |: a blank
		default:
			if s.depth == 0 {
				s.emit(tkEOL, start, s.pos)
			}
		}
	case '"':
		end, err := skipChars(src, start, '"')
		if err != nil {
			return err
		}
		s.pos = end
		s.emit(tkString, start, end)
	case '[':
		end, err := skipChars(src, start, ']')
		if err != nil {
			return err
		}
		s.pos = end
		s.emit(tkClass, start, end)
	case '<', '!':
		_, end, err := scanTokenRef(src, start)
		if err != nil {
			return err
		}
		s.pos = end
		s.emit(tkTokenRef, start, end)
	case '(':
		s.depth++
		if s.depth > MaxDepth {
			s.fatal = &Error{Pos: s.posAt(start), Msg: fmt.Sprintf("parentheses nested more than %d deep (limit MaxDepth)", MaxDepth)}
			return &lexErr{off: start}
		}
		s.pos++
		s.emit(tkLParen, start, s.pos)
	case ')':
		if s.depth > 0 {
			s.depth--
		}
		s.pos++
		s.emit(tkRParen, start, s.pos)
	case '{':
		s.braces = true
		s.pos++
		s.emit(tkLBrace, start, s.pos)
	case '}':
		s.braces = false
		s.pos++
		s.emit(tkRBrace, start, s.pos)
	case ',':
		s.pos++
		s.emit(tkComma, start, s.pos)
	case '|':
		s.pos++
		s.emit(tkPipe, start, s.pos)
	case '.':
		s.pos++
		s.emit(tkDot, start, s.pos)
	case '*':
		s.pos++
		s.emit(tkStar, start, s.pos)
	case '+':
		s.pos++
		s.emit(tkPlus, start, s.pos)
	case '?':
		s.pos++
		s.emit(tkQuestion, start, s.pos)
	case ':':
		if len(src)-start >= 3 && src[start:start+3] == "::=" {
			s.pos += 3
			s.defines++
			s.emit(tkDefine, start, s.pos)
			return nil
		}
		return errAt(start, "expected ::=")
	default:
		switch {
		case s.braces && isDigit(c):
			for s.pos < len(src) && isDigit(src[s.pos]) {
				s.pos++
			}
			s.emit(tkInt, start, s.pos)
		case isWordChar(c):
			for s.pos < len(src) && isWordChar(src[s.pos]) {
				s.pos++
			}
			s.emit(tkName, start, s.pos)
		case c == 0:
			return errAt(start, "NUL byte in grammar")
		default:
			r, size := utf8.DecodeRuneInString(src[start:])
			if r == utf8.RuneError && size <= 1 {
				return errAt(start, "invalid UTF-8 byte 0x%02X", c)
			}
			return errAt(start, "unexpected character %q", r)
		}
	}
	return nil
}

// plainChar reports whether c is a char of a literal or class on its own:
// ASCII, and neither an escape nor NUL. scanChar's first case, which its
// callers test inline.
func plainChar(c byte) bool { return c != '\\' && c != 0 && c < utf8.RuneSelf }

// scanChar decodes one char of a literal or class at start, with exactly
// llama.cpp's escapes, and returns the offset after it. The quote or
// bracket that ends the literal is checked by the caller.
func scanChar(src string, start int) (litChar, int, *lexErr) {
	c := src[start]
	if plainChar(c) {
		return litChar{r: rune(c), off: start}, start + 1, nil
	}
	if c == 0 {
		return litChar{}, 0, errAt(start, "NUL byte in grammar")
	}
	if c != '\\' {
		r, size := utf8.DecodeRuneInString(src[start:])
		if r == utf8.RuneError && size <= 1 {
			return litChar{}, 0, errAt(start, "invalid UTF-8 byte 0x%02X", c)
		}
		return litChar{r: r, off: start}, start + size, nil
	}
	if start+1 >= len(src) {
		return litChar{}, 0, errAt(start, "unterminated escape sequence")
	}
	e := src[start+1]
	hex := 0
	var r rune
	switch e {
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	case 't':
		r = '\t'
	case 'r':
		r = '\r'
	case 'n':
		r = '\n'
	case '\\', '"', '[', ']', '-':
		r = rune(e)
	default:
		esc := string(rune(e))
		if e >= utf8.RuneSelf {
			rr, _ := utf8.DecodeRuneInString(src[start+1:])
			esc = string(rr)
		}
		return litChar{}, 0, errAt(start, "unknown escape %q (valid: \\xHH \\uHHHH \\UHHHHHHHH \\t \\r \\n \\\\ \\\" \\[ \\] \\-)", "\\"+esc)
	}
	if hex == 0 {
		return litChar{r: r, off: start}, start + 2, nil
	}
	p := start + 2
	var v uint64
	for i := 0; i < hex; i++ {
		if p+i >= len(src) {
			return litChar{}, 0, errAt(start, "\\%c needs %d hex digits", e, hex)
		}
		d := src[p+i]
		switch {
		case '0' <= d && d <= '9':
			v = v<<4 | uint64(d-'0')
		case 'a' <= d && d <= 'f':
			v = v<<4 | uint64(d-'a'+10)
		case 'A' <= d && d <= 'F':
			v = v<<4 | uint64(d-'A'+10)
		default:
			return litChar{}, 0, errAt(start, "\\%c needs %d hex digits", e, hex)
		}
	}
	if v > 0x7fffffff {
		// Kept as a rune; anything above unicode.MaxRune is rejected
		// (or clipped, at a range end) when the node is built.
		v = 0x7fffffff
	}
	return litChar{r: rune(v), off: start}, p + hex, nil
}

// skipChars checks the string literal or class at start (its quote or
// "[") and returns the offset after it. It reads what the lowerer decodes
// (lowerer.literal, scanClass) without decoding it, so with the same
// errors: each char is what scanChar reads, up to the first term ('"' or
// ']') that is not part of an escape; a class's "^" and "-" are chars of
// their own here. Runs of plain ASCII are skipped a byte at a time.
func skipChars(src string, start int, term byte) (int, *lexErr) {
	for p := start + 1; ; {
		for p < len(src) && src[p] != term && plainChar(src[p]) {
			p++
		}
		switch {
		case p >= len(src) && term == '"':
			return 0, errAt(start, "unterminated string literal")
		case p >= len(src):
			return 0, errAt(start, "unterminated character class")
		case src[p] == term:
			return p + 1, nil
		}
		_, next, err := scanChar(src, p)
		if err != nil {
			return 0, err
		}
		p = next
	}
}

// scanClass reads the class at start (its "[") as llama.cpp does: after
// "[" and an optional "^", chars up to an unescaped "]"; a char followed
// by "-" and then anything but "]" is the start of a range, so "-" is
// literal first, last, or right after a range. It appends the members to
// items and returns them, whether the class is negated, and the offset
// after the "]".
func scanClass(src string, start int, items []classItem) ([]classItem, bool, int, *lexErr) {
	p := start + 1
	negated := false
	if p < len(src) && src[p] == '^' {
		negated = true
		p++
	}
	for {
		if p >= len(src) {
			return items, false, 0, errAt(start, "unterminated character class")
		}
		if src[p] == ']' {
			return items, negated, p + 1, nil
		}
		lo, next := litChar{r: rune(src[p]), off: p}, p+1
		if !plainChar(src[p]) {
			var err *lexErr
			if lo, next, err = scanChar(src, p); err != nil {
				return items, false, 0, err
			}
		}
		p = next
		it := classItem{lo: lo, hi: lo}
		if p < len(src) && src[p] == '-' && (p+1 >= len(src) || src[p+1] != ']') {
			p++
			if p >= len(src) {
				return items, false, 0, errAt(start, "unterminated character class")
			}
			hi, next := litChar{r: rune(src[p]), off: p}, p+1
			if !plainChar(src[p]) {
				var err *lexErr
				if hi, next, err = scanChar(src, p); err != nil {
					return items, false, 0, err
				}
			}
			p = next
			it.hi = hi
			it.isRange = true
		}
		items = append(items, it)
	}
}

// scanTokenRef reads <[id]>, <|text|> and their negations !<[id]>,
// !<|text|> at start, and returns the reference and the offset after it.
// As in llama.cpp, "!" must be followed directly by "<", and there is no
// space inside the brackets. llama.cpp takes any <text> up to the first
// ">" and tokenizes it with the model's vocabulary; we accept the
// <|text|> form of special tokens only (text without ">").
func scanTokenRef(src string, start int) (tokenRef, int, *lexErr) {
	var ref tokenRef
	p := start
	if src[p] == '!' {
		ref.negated = true
		p++
		if p >= len(src) || src[p] != '<' {
			return ref, 0, errAt(start, "expected a token reference <[id]> or <|text|> after \"!\"")
		}
	}
	p++ // '<'
	switch {
	case p < len(src) && src[p] == '[':
		p++
		ds := p
		for p < len(src) && isDigit(src[p]) {
			p++
		}
		if p == ds {
			return ref, 0, errAt(p, "expected a token id (digits) in <[id]>")
		}
		digits := src[ds:p]
		if len(digits) > 10 {
			return ref, 0, errAt(ds, "token id %s is over the limit %d (MaxTokenID)", digits, MaxTokenID)
		}
		v, _ := strconv.ParseInt(digits, 10, 64)
		if v > MaxTokenID {
			return ref, 0, errAt(ds, "token id %s is over the limit %d (MaxTokenID)", digits, MaxTokenID)
		}
		ref.id = v
		if p+1 >= len(src) || src[p] != ']' || src[p+1] != '>' {
			return ref, 0, errAt(p, "expected ]> to end the token reference")
		}
		p += 2
	case p < len(src) && src[p] == '|':
		p++
		ts := p
		for p < len(src) && src[p] != '>' {
			p++
		}
		if p >= len(src) {
			return ref, 0, errAt(start, "unterminated token reference (expected |>)")
		}
		if p-1 < ts || src[p-1] != '|' {
			return ref, 0, errAt(p, "token text must end with |> (the text of <|text|> cannot contain \">\")")
		}
		text := src[ts : p-1]
		if text == "" {
			return ref, 0, errAt(start, "empty token text in <||>")
		}
		if !utf8.ValidString(text) {
			return ref, 0, errAt(ts, "invalid UTF-8 in token text")
		}
		if i := strings.IndexByte(text, 0); i >= 0 {
			return ref, 0, errAt(ts+i, "NUL byte in grammar")
		}
		ref.byText = true
		ref.text = text
		ref.id = -1
		p++
	default:
		return ref, 0, errAt(start, "expected a token reference <[id]> or <|text|> (llama.cpp's <text> needs a vocabulary; only <|text|> is kept by text)")
	}
	return ref, p, nil
}

// lexDef tells participle the token types; the tokens themselves come
// from the scanner through ParseFromLexer.
type lexDef struct{}

func (d lexDef) Symbols() map[string]lexer.TokenType { return symbols }

func (d lexDef) Lex(string, io.Reader) (lexer.Lexer, error) {
	return nil, errors.New("gbnf: the GBNF lexer runs before participle, not through it")
}
