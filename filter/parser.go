package filter

import (
	"fmt"
	"math"
	"strconv"
)

// Limits on what Compile accepts, so that a hostile subscription cannot exhaust memory or
// stack.
const (
	// MaxLength is the longest expression, in bytes, Compile accepts; the canonical form
	// (String) of an accepted expression is no longer either.
	MaxLength = 64 << 10
	// MaxDepth is the greatest height of the expression tree: a comparison of two
	// properties has height 2, a NOT of it 3. A chain of ANDs or ORs adds one level
	// however long it is.
	MaxDepth = 64
)

// maxNesting bounds the parser's recursion: parentheses, NOT and signs, each counting one.
// The canonical form of a tree within MaxDepth has at most two of these per level, so it
// always compiles again.
const maxNesting = 2 * MaxDepth

// Compile parses expr, an SQL92 message selector as RocketMQ defines it (see the package
// documentation for the grammar), and checks its operand types. A bad expression gives a
// *SyntaxError naming the position and what was expected.
func Compile(expr string) (*Expression, error) {
	if len(expr) > MaxLength {
		return nil, &SyntaxError{Offset: -1, Msg: fmt.Sprintf("expression is %d bytes long, more than the limit of %d", len(expr), MaxLength)}
	}
	p := &parser{src: expr, lex: lexer{src: expr}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokEOF {
		return nil, p.errorf(p.tok.pos, "expression is empty")
	}
	root, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errorf(p.tok.pos, "unexpected %s after %s", p.tok.describe(p.src), p.prev.describe(p.src))
	}
	if root, err = p.condition(root, "the expression"); err != nil {
		return nil, err
	}
	canon := root.String()
	if len(canon) > MaxLength {
		return nil, &SyntaxError{Offset: -1, Msg: fmt.Sprintf("canonical form of the expression is %d bytes long, more than the limit of %d", len(canon), MaxLength)}
	}
	return &Expression{root: root, canon: canon}, nil
}

// parser is a recursive-descent parser with one token of lookahead. Each parse method starts
// at p.tok and leaves p.tok at the first token it did not use.
type parser struct {
	src     string
	lex     lexer
	tok     token // current token
	prev    token // the token before it; kind tokEOF at the start
	nesting int
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.prev, p.tok = p.tok, t
	return nil
}

func (p *parser) errorf(pos int, format string, args ...any) error {
	return errorAt(p.src, pos, fmt.Sprintf(format, args...))
}

// expected reports that p.tok is not what must follow p.prev.
func (p *parser) expected(what string) error {
	msg := "expected " + what
	if p.prev.kind != tokEOF {
		msg += " after " + p.prev.describe(p.src)
	}
	if p.tok.kind != tokEOF {
		msg += ", found " + p.tok.describe(p.src)
	}
	return errorAt(p.src, p.tok.pos, msg)
}

// enter counts one level of parser recursion.
func (p *parser) enter() error {
	if p.nesting++; p.nesting > maxNesting {
		return p.errorf(p.tok.pos, "parentheses, NOT and signs nested more than %d deep", maxNesting)
	}
	return nil
}

// nested consumes p.tok (a '(', NOT or sign) and parses what follows with parse, counting
// one level of nesting.
func (p *parser) nested(parse func() (*node, error)) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	x, err := parse()
	p.nesting--
	return x, err
}

// newNode builds an operator node over kids, checking the tree height.
func (p *parser) newNode(o op, pos int, kids ...*node) (*node, error) {
	n := &node{op: o, pos: pos, kids: kids}
	for _, k := range kids {
		n.height = max(n.height, k.height+1)
	}
	if n.height > MaxDepth {
		return nil, p.errorf(pos, "expression nested more than %d levels deep", MaxDepth)
	}
	return n, nil
}

// condition checks that x can stand where a condition is needed; a property there is read
// as a boolean (true when its value is "true" in any case).
func (p *parser) condition(x *node, where string) (*node, error) {
	switch x.typ() {
	case typCond, typNull:
		return x, nil
	case typProperty:
		return &node{op: opBoolCast, pos: x.pos, name: x.name, height: 1}, nil
	}
	return nil, p.errorf(x.pos, "%s must be a condition, not %s", where, x.describe())
}

// parseOr parses: AndExpr { OR AndExpr }.
func (p *parser) parseOr() (*node, error) { return p.parseChain(tokOr, opOr, p.parseAnd) }

// parseAnd parses: NotExpr { AND NotExpr }.
func (p *parser) parseAnd() (*node, error) { return p.parseChain(tokAnd, opAnd, p.parseNot) }

// parseChain parses operands joined by sep into one node with op o, flattening nested
// chains of the same operator: AND and OR are associative in three-valued logic too.
func (p *parser) parseChain(sep tokenKind, o op, operand func() (*node, error)) (*node, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == sep {
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := operand()
		if err != nil {
			return nil, err
		}
		where := "each side of " + o.symbol()
		if left, err = p.condition(left, where); err != nil {
			return nil, err
		}
		if right, err = p.condition(right, where); err != nil {
			return nil, err
		}
		if left.op != o {
			if left, err = p.newNode(o, left.pos, left); err != nil {
				return nil, err
			}
		}
		height := right.height + 1
		if right.op == o {
			left.kids = append(left.kids, right.kids...)
			height = right.height
		} else {
			left.kids = append(left.kids, right)
		}
		if left.height = max(left.height, height); left.height > MaxDepth {
			return nil, p.errorf(left.pos, "expression nested more than %d levels deep", MaxDepth)
		}
	}
	return left, nil
}

// parseNot parses: NOT NotExpr | Equality.
func (p *parser) parseNot() (*node, error) {
	if p.tok.kind != tokNot {
		return p.parseEquality()
	}
	pos := p.tok.pos
	x, err := p.nested(p.parseNot)
	if err != nil {
		return nil, err
	}
	if x, err = p.condition(x, "the operand of NOT"); err != nil {
		return nil, err
	}
	return p.newNode(opNot, pos, x)
}

// parseEquality parses: Relational { ("=" | "<>" | "!=") Relational | IS [NOT] NULL }.
func (p *parser) parseEquality() (*node, error) {
	left, err := p.parseRelational()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok
		switch t.kind {
		case tokEq, tokNe:
			if err := p.advance(); err != nil {
				return nil, err
			}
			right, err := p.parseRelational()
			if err != nil {
				return nil, err
			}
			o := opEq
			if t.kind == tokNe {
				o = opNe
			}
			if err := p.checkEqual(o, t.pos, left, right); err != nil {
				return nil, err
			}
			if left, err = p.newNode(o, left.pos, left, right); err != nil {
				return nil, err
			}
		case tokIs:
			if err := p.advance(); err != nil {
				return nil, err
			}
			o := opIsNull
			if p.tok.kind == tokNot {
				o = opIsNotNull
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			if p.tok.kind != tokNull {
				return nil, p.expected("NULL")
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if left, err = p.newNode(o, left.pos, left); err != nil {
				return nil, err
			}
		default:
			return left, nil
		}
	}
}

// checkEqual checks the operands of = and <>: NULL is compared with IS NULL, and two
// operands of known, different types can never be equal.
func (p *parser) checkEqual(o op, pos int, l, r *node) error {
	for _, x := range []*node{l, r} {
		if x.typ() == typNull {
			return p.errorf(x.pos, "NULL cannot be compared with '%s': use IS NULL or IS NOT NULL", o.symbol())
		}
	}
	if lt, rt := l.typ(), r.typ(); lt != typProperty && rt != typProperty && lt != rt {
		return p.errorf(pos, "%s cannot be compared with %s", l.describe(), r.describe())
	}
	return nil
}

// checkOrdered checks an operand of <, <=, >, >= or BETWEEN: only numbers and properties
// have an order.
func (p *parser) checkOrdered(o op, x *node) error {
	if t := x.typ(); t != typNumber && t != typProperty {
		return p.errorf(x.pos, "%s cannot be compared with '%s': only numbers and properties can", x.describe(), o.symbol())
	}
	return nil
}

// parseRelational parses: Unary { ("<" | "<=" | ">" | ">=") Unary | [NOT] BETWEEN Unary
// AND Unary | [NOT] IN "(" String {"," String} ")" | [NOT] (CONTAINS | STARTSWITH |
// ENDSWITH) String }.
func (p *parser) parseRelational() (*node, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t := p.tok
		switch t.kind {
		case tokLt, tokLe, tokGt, tokGe:
			left, err = p.parseOrdered(left, tokenOp(t.kind, false))
		case tokNot:
			if err := p.advance(); err != nil {
				return nil, err
			}
			switch p.tok.kind {
			case tokBetween, tokIn, tokContains, tokStartsWith, tokEndsWith:
				left, err = p.parsePredicate(left, true, t.pos)
			default:
				return nil, p.expected("BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH")
			}
		case tokBetween, tokIn, tokContains, tokStartsWith, tokEndsWith:
			left, err = p.parsePredicate(left, false, t.pos)
		default:
			return left, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// parseOrdered parses the right operand of left < right and the like, p.tok being the
// operator.
func (p *parser) parseOrdered(left *node, o op) (*node, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	right, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for _, x := range []*node{left, right} {
		if err := p.checkOrdered(o, x); err != nil {
			return nil, err
		}
	}
	return p.newNode(o, left.pos, left, right)
}

// parsePredicate parses the rest of a BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH
// predicate on left, p.tok being its keyword; not is whether NOT came before it, and pos
// where the operator (NOT included) starts.
func (p *parser) parsePredicate(left *node, not bool, pos int) (*node, error) {
	t := p.tok
	if err := p.advance(); err != nil {
		return nil, err
	}
	switch t.kind {
	case tokBetween:
		return p.parseBetween(left, not)
	case tokIn:
		o := tokenOp(tokIn, not)
		if left.op != opProperty {
			return nil, p.errorf(pos, "%s needs a property on its left, not %s", o.symbol(), left.describe())
		}
		list, err := p.parseStringList()
		if err != nil {
			return nil, err
		}
		n, err := p.newNode(o, left.pos, left)
		if err != nil {
			return nil, err
		}
		n.list = list
		if len(list) >= inSetMin {
			n.set = make(map[string]struct{}, len(list))
			for _, s := range list {
				n.set[s] = struct{}{}
			}
		}
		return n, nil
	}
	o := tokenOp(t.kind, not)
	if typ := left.typ(); typ != typProperty && typ != typString {
		return nil, p.errorf(pos, "%s needs a property or a string on its left, not %s", o.symbol(), left.describe())
	}
	if p.tok.kind != tokString {
		return nil, p.expected("a string literal")
	}
	n, err := p.newNode(o, left.pos, left)
	if err != nil {
		return nil, err
	}
	n.str = p.tok.text
	return n, p.advance()
}

// tokenOp is the operator a comparison or predicate keyword stands for; not selects the NOT
// form of a predicate.
func tokenOp(k tokenKind, not bool) op {
	var plain, negated op // callers pass only the kinds below
	switch k {
	case tokLt:
		plain = opLt
	case tokLe:
		plain = opLe
	case tokGt:
		plain = opGt
	case tokGe:
		plain = opGe
	case tokBetween:
		plain, negated = opBetween, opNotBetween
	case tokIn:
		plain, negated = opIn, opNotIn
	case tokContains:
		plain, negated = opContains, opNotContains
	case tokStartsWith:
		plain, negated = opStartsWith, opNotStartsWith
	case tokEndsWith:
		plain, negated = opEndsWith, opNotEndsWith
	}
	if not {
		return negated
	}
	return plain
}

// parseBetween parses the bounds of [NOT] BETWEEN low AND high.
func (p *parser) parseBetween(left *node, not bool) (*node, error) {
	o := tokenOp(tokBetween, not)
	low, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokAnd {
		return nil, p.expected("AND")
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	high, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for _, x := range []*node{left, low, high} {
		if err := p.checkOrdered(o, x); err != nil {
			return nil, err
		}
	}
	// RocketMQ refuses an empty constant range for BETWEEN (not for NOT BETWEEN).
	if o == opBetween && low.op == opLiteral && high.op == opLiteral {
		if c, _ := compareNumbers(low.lit, high.lit); c > 0 {
			return nil, p.errorf(low.pos, "BETWEEN lower bound %s is greater than upper bound %s", low, high)
		}
	}
	return p.newNode(o, left.pos, left, low, high)
}

// parseStringList parses "(" String { "," String } ")".
func (p *parser) parseStringList() ([]string, error) {
	if p.tok.kind != tokLParen {
		return nil, p.expected("'('")
	}
	var list []string
	for {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokString {
			return nil, p.expected("a string literal")
		}
		list = append(list, p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch p.tok.kind {
		case tokComma:
			continue
		case tokRParen:
			return list, p.advance()
		}
		return nil, p.expected("',' or ')'")
	}
}

// parseUnary parses: ("+" | "-") Unary | Primary. A sign applies to numbers and properties;
// on a literal it is folded into the literal.
func (p *parser) parseUnary() (*node, error) {
	t := p.tok
	if t.kind != tokMinus && t.kind != tokPlus {
		return p.parsePrimary()
	}
	signed := false
	x, err := p.nested(func() (*node, error) {
		if t.kind == tokMinus && p.tok.kind == tokInt {
			// The literal takes the sign, so that -9223372036854775808 is in range.
			signed = true
			return p.parseLong(t.pos, "-")
		}
		return p.parseUnary()
	})
	if err != nil || signed {
		return x, err
	}
	if typ := x.typ(); typ != typNumber && typ != typProperty {
		return nil, p.errorf(t.pos, "sign '%s' needs a number or a property, not %s", p.src[t.pos:t.end], x.describe())
	}
	switch {
	case t.kind == tokPlus:
		return x, nil
	case x.op != opLiteral:
		return p.newNode(opNegate, t.pos, x)
	case x.lit.kind == kindFloat:
		x.lit.f = -x.lit.f
	case x.lit.i == minInt64:
		return nil, p.errorf(t.pos, "integer %s is out of range (a long holds %d to %d)", "-"+x.String(), int64(minInt64), int64(math.MaxInt64))
	default:
		x.lit.i = -x.lit.i
	}
	x.pos = t.pos
	return x, nil
}

// parsePrimary parses: Literal | Property | "(" OrExpr ")".
func (p *parser) parsePrimary() (*node, error) {
	t := p.tok
	literal := func(v value) (*node, error) {
		return &node{op: opLiteral, pos: t.pos, height: 1, lit: v}, p.advance()
	}
	switch t.kind {
	case tokString:
		return literal(value{kind: kindString, s: t.text})
	case tokInt:
		return p.parseLong(t.pos, "")
	case tokFloat:
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil { // the lexer checked the syntax: only a value beyond the double range fails
			return nil, p.errorf(t.pos, "decimal %s is out of range (a double holds at most %g)", clip(t.text), math.MaxFloat64)
		}
		return literal(value{kind: kindFloat, f: f}) // a decimal too small for a double is 0
	case tokTrue:
		return literal(value{kind: kindBool, b: true})
	case tokFalse:
		return literal(value{kind: kindBool})
	case tokNull:
		return literal(value{})
	case tokIdent:
		return &node{op: opProperty, pos: t.pos, height: 1, name: t.text}, p.advance()
	case tokLParen:
		x, err := p.nested(p.parseOr)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, p.expected(fmt.Sprintf("')' to close the '(' at column %d", errorAt(p.src, t.pos, "").Column))
		}
		return x, p.advance()
	}
	return nil, p.expected("a value")
}

// parseLong parses the integer literal p.tok with the given sign ("" or "-"). pos is where
// the literal, sign included, starts.
func (p *parser) parseLong(pos int, sign string) (*node, error) {
	i, err := strconv.ParseInt(sign+p.tok.text, 10, 64)
	if err != nil {
		return nil, p.errorf(pos, "integer %s%s is out of range (a long holds %d to %d)", sign, clip(p.tok.text), int64(minInt64), int64(math.MaxInt64))
	}
	n := &node{op: opLiteral, pos: pos, height: 1, lit: value{kind: kindInt, i: i}}
	return n, p.advance()
}
