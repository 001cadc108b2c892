package gbnf

import "strconv"

// String returns the name of the op without its prefix ("Literal").
func (op Op) String() string {
	switch op {
	case OpEmpty:
		return "Empty"
	case OpLiteral:
		return "Literal"
	case OpClass:
		return "Class"
	case OpSeq:
		return "Seq"
	case OpAlt:
		return "Alt"
	case OpRepeat:
		return "Repeat"
	case OpRule:
		return "Rule"
	case OpToken:
		return "Token"
	}
	return "Op(" + strconv.Itoa(int(op)) + ")"
}
