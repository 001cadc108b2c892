package gbnf

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String prints g as canonical GBNF: every rule in definition order, one a
// line, with minimal parentheses, "" for an empty alternative, and
// literals and classes escaped so that every code point survives a round
// trip. Parse(g.String()) gives a grammar equal to g (Equal).
func (g *Grammar) String() string {
	var b strings.Builder
	for _, r := range g.Rules {
		b.WriteString(r.Name)
		b.WriteString(" ::= ")
		g.writeNode(&b, r.Body, precAlt)
		b.WriteByte('\n')
	}
	return b.String()
}

// NodeString prints one node of g in GBNF (rule references by name).
func (g *Grammar) NodeString(n *Node) string {
	var b strings.Builder
	g.writeNode(&b, n, precAlt)
	return b.String()
}

// Precedence levels: an alternation inside a sequence, and a sequence or
// alternation under a repetition, need parentheses.
const (
	precAlt = iota
	precSeq
	precRepeat
)

func (g *Grammar) writeNode(b *strings.Builder, n *Node, prec int) {
	if n == nil {
		b.WriteString("<nil>")
		return
	}
	switch n.Op {
	case OpEmpty:
		b.WriteString(`""`)
	case OpLiteral:
		b.WriteByte('"')
		for _, r := range n.Runes {
			writeLitRune(b, r)
		}
		b.WriteByte('"')
	case OpClass:
		writeClass(b, n)
	case OpToken:
		if n.Negated {
			b.WriteByte('!')
		}
		if n.Token < 0 {
			b.WriteString("<|")
			b.WriteString(n.TokenText)
			b.WriteString("|>")
		} else {
			b.WriteString("<[")
			b.WriteString(strconv.Itoa(int(n.Token)))
			b.WriteString("]>")
		}
	case OpRule:
		if int(n.Rule) < len(g.Rules) && n.Rule >= 0 {
			b.WriteString(g.Rules[n.Rule].Name)
		} else {
			fmt.Fprintf(b, "<rule %d>", n.Rule)
		}
	case OpSeq:
		if prec > precSeq {
			b.WriteByte('(')
		}
		for i, s := range n.Subs {
			if i > 0 {
				b.WriteByte(' ')
			}
			g.writeNode(b, s, precSeq+1)
		}
		if prec > precSeq {
			b.WriteByte(')')
		}
	case OpAlt:
		if prec > precAlt {
			b.WriteByte('(')
		}
		for i, s := range n.Subs {
			if i > 0 {
				b.WriteString(" | ")
			}
			g.writeNode(b, s, precAlt+1)
		}
		if prec > precAlt {
			b.WriteByte(')')
		}
	case OpRepeat:
		g.writeNode(b, n.Subs[0], precRepeat)
		switch {
		case n.Min == 0 && n.Max == Unbounded:
			b.WriteByte('*')
		case n.Min == 1 && n.Max == Unbounded:
			b.WriteByte('+')
		case n.Min == 0 && n.Max == 1:
			b.WriteByte('?')
		case n.Max == Unbounded:
			fmt.Fprintf(b, "{%d,}", n.Min)
		case n.Min == n.Max:
			fmt.Fprintf(b, "{%d}", n.Min)
		default:
			fmt.Fprintf(b, "{%d,%d}", n.Min, n.Max)
		}
	default:
		fmt.Fprintf(b, "<op %d>", n.Op)
	}
}

// writeEscape writes a code point that needs an escape.
func writeEscape(b *strings.Builder, r rune) {
	switch r {
	case '\t':
		b.WriteString(`\t`)
	case '\n':
		b.WriteString(`\n`)
	case '\r':
		b.WriteString(`\r`)
	default:
		switch {
		case r < 0x100:
			fmt.Fprintf(b, `\x%02X`, r)
		case r < 0x10000:
			fmt.Fprintf(b, `\u%04X`, r)
		default:
			fmt.Fprintf(b, `\U%08X`, r)
		}
	}
}

// plain reports whether r can be written as itself (in UTF-8) in a
// literal or class: printable, and not a space other than ' '.
func plain(r rune) bool {
	if r < utf8.RuneSelf {
		return 0x20 <= r && r < 0x7f
	}
	return unicode.IsGraphic(r) && !unicode.IsSpace(r) && r != utf8.RuneError
}

func writeLitRune(b *strings.Builder, r rune) {
	switch {
	case r == '"' || r == '\\':
		b.WriteByte('\\')
		b.WriteRune(r)
	case plain(r):
		b.WriteRune(r)
	default:
		writeEscape(b, r)
	}
}

// writeClassRune writes one class member char. first and last say whether
// it is the first or last thing between the brackets: a "-" there is
// literal (llama.cpp reads it so), elsewhere it is written \x2D, which
// every llama.cpp version reads (\- is recent). A "^" right after "[" is
// written \x5E so that it does not negate the class.
func writeClassRune(b *strings.Builder, r rune, first, last bool) {
	switch {
	case r == ']' || r == '\\':
		b.WriteByte('\\')
		b.WriteRune(r)
	case r == '-' && !first && !last:
		b.WriteString(`\x2D`)
	case r == '^' && first:
		b.WriteString(`\x5E`)
	case plain(r):
		b.WriteRune(r)
	default:
		writeEscape(b, r)
	}
}

func writeClass(b *strings.Builder, n *Node) {
	if n.Negated && len(n.Ranges) == 0 {
		b.WriteByte('.')
		return
	}
	b.WriteByte('[')
	if n.Negated {
		b.WriteByte('^')
	}
	// Print ranges that meet across the surrogates as one range: the
	// parser drops the surrogates again.
	var rs []rune
	for i := 0; i+1 < len(n.Ranges); i += 2 {
		if k := len(rs); k > 0 && rs[k-1] == 0xD7FF && n.Ranges[i] == 0xE000 {
			rs[k-1] = n.Ranges[i+1]
			continue
		}
		rs = append(rs, n.Ranges[i], n.Ranges[i+1])
	}
	for i := 0; i+1 < len(rs); i += 2 {
		lo, hi := rs[i], rs[i+1]
		first := i == 0 && !n.Negated
		last := i+2 >= len(rs)
		switch {
		case lo == hi:
			writeClassRune(b, lo, first, last)
		case hi == lo+1:
			// Two chars read better than a range; a "-" at the start
			// of a range would read as a range itself, so escape it.
			writeClassRune(b, lo, first, false)
			writeClassRune(b, hi, false, last)
		default:
			writeClassRune(b, lo, first, false)
			b.WriteByte('-')
			writeClassRune(b, hi, false, false)
		}
	}
	b.WriteByte(']')
}
