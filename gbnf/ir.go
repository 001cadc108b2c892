package gbnf

// In this package, g is always a *Grammar, r a *Rule, n a *Node and
// id a RuleID.

// RuleID indexes Grammar.Rules.
type RuleID int32

// Op is the kind of a Node.
type Op uint8

const (
	// OpEmpty matches the empty string ("" or an empty alternative).
	OpEmpty Op = iota
	// OpLiteral matches the UTF-8 encoding of Node.Runes, in order.
	// A literal always has at least one rune (an empty literal is OpEmpty).
	OpLiteral
	// OpClass matches one code point: one in Node.Ranges, or, when
	// Node.Negated is set, one not in Node.Ranges. "." is a negated class
	// with no ranges. Only Unicode scalar values are ever matched
	// (surrogates U+D800–U+DFFF are never produced: output is valid UTF-8).
	OpClass
	// OpSeq matches Node.Subs one after another (len(Subs) >= 2).
	OpSeq
	// OpAlt matches any one of Node.Subs (len(Subs) >= 2).
	OpAlt
	// OpRepeat matches Node.Subs[0] between Node.Min and Node.Max times;
	// Max == Unbounded means no upper bound. "*" is {0,}, "+" is {1,},
	// "?" is {0,1}.
	OpRepeat
	// OpRule matches the rule Node.Rule (a reference by name).
	OpRule
	// OpToken matches exactly one vocabulary token: the token whose id is
	// Node.Token (`<[id]>`) or whose text is Node.TokenText (`<|text|>`,
	// then Token is -1 until a vocabulary resolves it); with Node.Negated
	// (`!<[id]>`) it matches any single token except that one.
	OpToken
)

// Unbounded is Node.Max for a repetition without an upper bound.
const Unbounded = -1

// Pos is a position in grammar source. Line and Col are 1-based; Col
// counts bytes. Offset is the 0-based byte offset.
type Pos struct {
	Offset int
	Line   int
	Col    int
}

// Node is one node of a rule body.
type Node struct {
	Op  Op
	Pos Pos // where the node starts in the source (zero for synthesized nodes)

	Subs []*Node // OpSeq, OpAlt: the parts; OpRepeat: the single repeated node

	Runes []rune // OpLiteral: the code points, in order

	// OpClass: sorted, non-overlapping, non-adjacent inclusive ranges
	// lo0, hi0, lo1, hi1, ... (normalized by the parser: [b-ca] is a-c).
	// They hold Unicode scalar values only: no surrogates, nothing above
	// U+10FFFF (the parser drops those parts of a range).
	Ranges []rune
	// OpClass: the class is [^...]; OpToken: the reference is !<[...]>.
	Negated bool

	Min, Max int // OpRepeat: bounds; Max == Unbounded for no upper bound

	Rule RuleID // OpRule: the referenced rule

	Token     int32  // OpToken: the token id, or -1 when given by text
	TokenText string // OpToken: the text between <| and |> (without them), if given by text
}

// Rule is one named rule `name ::= body`.
type Rule struct {
	ID   RuleID
	Name string
	Pos  Pos // position of the rule name in its definition
	Body *Node
}

// Grammar is a parsed GBNF grammar: rules in definition order
// (Rules[i].ID == RuleID(i)) and the root rule. A Grammar returned by
// Parse has every reference resolved and is never modified afterwards; it
// is safe for concurrent use.
type Grammar struct {
	Rules []*Rule
	Root  RuleID
}
