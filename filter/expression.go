package filter

import (
	"math"
	"strconv"
	"strings"
)

// Expression is a compiled SQL92 message selector. It is immutable: one Expression may be
// evaluated by any number of goroutines at once.
type Expression struct {
	root  *node
	canon string
}

// String returns the canonical form of the expression: reserved words in upper case, one
// space around operators, != written <>, numbers normalised, and parentheses only where the
// grammar needs them or where they make a NOT or a nested condition plain. Compiling the
// canonical form gives an Expression with the same canonical form and the same results.
func (e *Expression) String() string { return e.canon }

// Evaluate reports whether a message with the given properties matches. A property absent
// from props is NULL. The result is true only when the selector is TRUE; FALSE and UNKNOWN
// (a comparison involving NULL or a property that is not a number where one is needed) do
// not match. props is only read, and a nil map is a message without properties.
func (e *Expression) Evaluate(props map[string]string) bool {
	return e.root.test(props) == truthTrue
}

// op is the operation of one node of the expression tree.
type op uint8

const (
	opLiteral  op = iota // lit
	opProperty           // name: the property's string value, NULL when absent
	opBoolCast           // name: a property used as a condition
	opNegate             // -kids[0]
	opNot                // NOT kids[0]
	opAnd                // kids[0] AND kids[1] AND ...
	opOr                 // kids[0] OR kids[1] OR ...
	opEq                 // kids[0] = kids[1]
	opNe
	opLt
	opLe
	opGt
	opGe
	opBetween // kids[0] BETWEEN kids[1] AND kids[2]
	opNotBetween
	opIn // kids[0] IN (list); kids[0] is a property
	opNotIn
	opIsNull // kids[0] IS NULL
	opIsNotNull
	opContains // kids[0] CONTAINS str
	opNotContains
	opStartsWith
	opNotStartsWith
	opEndsWith
	opNotEndsWith
)

// symbol is how op is written between or after its operands.
func (o op) symbol() string {
	switch o {
	case opEq:
		return "="
	case opNe:
		return "<>"
	case opLt:
		return "<"
	case opLe:
		return "<="
	case opGt:
		return ">"
	case opGe:
		return ">="
	case opBetween:
		return "BETWEEN"
	case opNotBetween:
		return "NOT BETWEEN"
	case opIn:
		return "IN"
	case opNotIn:
		return "NOT IN"
	case opIsNull:
		return "IS NULL"
	case opIsNotNull:
		return "IS NOT NULL"
	case opContains:
		return "CONTAINS"
	case opNotContains:
		return "NOT CONTAINS"
	case opStartsWith:
		return "STARTSWITH"
	case opNotStartsWith:
		return "NOT STARTSWITH"
	case opEndsWith:
		return "ENDSWITH"
	case opNotEndsWith:
		return "NOT ENDSWITH"
	case opAnd:
		return "AND"
	case opOr:
		return "OR"
	case opNot:
		return "NOT"
	case opNegate:
		return "-"
	}
	return "?"
}

// inSetMin is the IN list length from which membership is looked up in a map.
const inSetMin = 8

// node is one node of the expression tree. Nodes are built by the parser and never change
// after Compile returns.
type node struct {
	op     op
	pos    int // byte offset of the node's first token, for error messages
	height int // 1 for a leaf
	lit    value
	name   string              // opProperty, opBoolCast
	str    string              // the search string of CONTAINS, STARTSWITH, ENDSWITH
	kids   []*node             // operands
	list   []string            // IN list, in the order written
	set    map[string]struct{} // IN list as a set, when it has inSetMin or more strings
}

// typ is the static type of a node, which the parser checks operands against.
type typ uint8

const (
	typCond     typ = iota // a condition: TRUE, FALSE, comparisons, AND, OR, NOT ...
	typNull                // the NULL literal (also allowed where a condition is)
	typNumber              // numeric literal or negation
	typString              // string literal
	typProperty            // property: a string or NULL, converted as its use demands
)

func (n *node) typ() typ {
	switch n.op {
	case opProperty:
		return typProperty
	case opNegate:
		return typNumber
	case opLiteral:
		switch n.lit.kind {
		case kindNull:
			return typNull
		case kindInt, kindFloat:
			return typNumber
		case kindString:
			return typString
		}
	}
	return typCond
}

// isLeaf reports whether n prints without operators of its own (besides a literal's sign).
func (n *node) isLeaf() bool {
	return n.op == opLiteral || n.op == opProperty || n.op == opBoolCast
}

// describe names n for an error message.
func (n *node) describe() string {
	switch n.typ() {
	case typNull:
		return "NULL"
	case typNumber:
		return "the number " + clip(n.String())
	case typString:
		return "the string " + clip(n.String())
	case typProperty:
		return "the property " + clip(n.name)
	}
	if n.op == opLiteral {
		return "the boolean " + n.String()
	}
	return "the condition " + clip(n.String())
}

// String returns the canonical text of the subtree at n.
func (n *node) String() string {
	var b strings.Builder
	n.format(&b)
	return b.String()
}

// format writes the canonical text of n.
func (n *node) format(b *strings.Builder) {
	switch n.op {
	case opLiteral:
		n.lit.format(b)
	case opProperty, opBoolCast:
		b.WriteString(n.name)
	case opNegate:
		b.WriteByte('-')
		// "--" would start a comment: a nested negation is always parenthesised.
		n.kids[0].formatOperand(b, n.kids[0].op != opProperty)
	case opNot:
		b.WriteString("NOT ")
		n.kids[0].formatOperand(b, !n.kids[0].isLeaf())
	case opAnd, opOr:
		for i, k := range n.kids {
			if i > 0 {
				b.WriteByte(' ')
				b.WriteString(n.op.symbol())
				b.WriteByte(' ')
			}
			k.formatOperand(b, k.op == opOr) // AND binds tighter than OR
		}
	case opIn, opNotIn:
		n.kids[0].formatOperand(b, false)
		b.WriteByte(' ')
		b.WriteString(n.op.symbol())
		b.WriteString(" (")
		for i, s := range n.list {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quote(s))
		}
		b.WriteByte(')')
	default: // comparisons and predicates
		n.kids[0].formatComparand(b)
		b.WriteByte(' ')
		b.WriteString(n.op.symbol())
		switch n.op {
		case opIsNull, opIsNotNull:
		case opBetween, opNotBetween:
			b.WriteByte(' ')
			n.kids[1].formatComparand(b)
			b.WriteString(" AND ")
			n.kids[2].formatComparand(b)
		case opContains, opNotContains, opStartsWith, opNotStartsWith, opEndsWith, opNotEndsWith:
			b.WriteByte(' ')
			b.WriteString(quote(n.str))
		default:
			b.WriteByte(' ')
			n.kids[1].formatComparand(b)
		}
	}
}

// formatOperand writes n, in parentheses if paren.
func (n *node) formatOperand(b *strings.Builder, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	n.format(b)
	if paren {
		b.WriteByte(')')
	}
}

// formatComparand writes an operand of a comparison: a condition is parenthesised.
func (n *node) formatComparand(b *strings.Builder) {
	n.formatOperand(b, !n.isLeaf() && n.op != opNegate)
}

// quote writes s as a string literal.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// format writes v as a literal that compiles back to v.
func (v value) format(b *strings.Builder) {
	switch v.kind {
	case kindNull:
		b.WriteString("NULL")
	case kindBool:
		if v.b {
			b.WriteString("TRUE")
		} else {
			b.WriteString("FALSE")
		}
	case kindInt:
		b.WriteString(strconv.FormatInt(v.i, 10))
	case kindFloat:
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		b.WriteString(s)
		if !strings.ContainsAny(s, ".e") && !math.IsInf(v.f, 0) && !math.IsNaN(v.f) {
			b.WriteString(".0") // keep it a decimal: 1.0, not the integer 1
		}
	case kindString:
		b.WriteString(quote(v.s))
	}
}
