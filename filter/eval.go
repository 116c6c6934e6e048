package filter

import (
	"strconv"
	"strings"
)

// kind is the dynamic type of a value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindInt // a long
	kindFloat
	kindString
)

// value is the result of evaluating a node. It is passed by value so that evaluation does
// not allocate.
type value struct {
	kind kind
	b    bool
	i    int64
	f    float64
	s    string
}

// truth is a three-valued logical result.
type truth uint8

const (
	truthUnknown truth = iota
	truthFalse
	truthTrue
)

func truthOf(b bool) truth {
	if b {
		return truthTrue
	}
	return truthFalse
}

// not is Kleene negation: NOT UNKNOWN is UNKNOWN.
func (t truth) not() truth {
	switch t {
	case truthTrue:
		return truthFalse
	case truthFalse:
		return truthTrue
	}
	return truthUnknown
}

// eval computes the value of n for a message with properties props.
func (n *node) eval(props map[string]string) value {
	switch n.op {
	case opLiteral:
		return n.lit
	case opProperty:
		if s, ok := props[n.name]; ok {
			return value{kind: kindString, s: s}
		}
		return value{}
	case opNegate:
		v, ok := number(n.kids[0].eval(props))
		if !ok {
			return value{}
		}
		if v.kind == kindInt && v.i != minInt64 {
			return value{kind: kindInt, i: -v.i}
		}
		return value{kind: kindFloat, f: -v.float()}
	}
	switch n.test(props) {
	case truthTrue:
		return value{kind: kindBool, b: true}
	case truthFalse:
		return value{kind: kindBool}
	}
	return value{}
}

// test computes the truth of the condition n for a message with properties props.
func (n *node) test(props map[string]string) truth {
	switch n.op {
	case opLiteral:
		if n.lit.kind == kindBool {
			return truthOf(n.lit.b)
		}
		return truthUnknown // NULL
	case opBoolCast:
		if s, ok := props[n.name]; ok {
			return truthOf(stringBool(s))
		}
		return truthUnknown
	case opNot:
		return n.kids[0].test(props).not()
	case opAnd:
		return n.chain(props, truthFalse, truthTrue)
	case opOr:
		return n.chain(props, truthTrue, truthFalse)
	case opEq:
		return equal(n.kids[0].eval(props), n.kids[1].eval(props))
	case opNe:
		return equal(n.kids[0].eval(props), n.kids[1].eval(props)).not()
	case opLt, opLe, opGt, opGe:
		return order(n.op, n.kids[0].eval(props), n.kids[1].eval(props))
	case opBetween, opNotBetween:
		v, lo, hi := n.kids[0].eval(props), n.kids[1].eval(props), n.kids[2].eval(props)
		if n.op == opBetween { // v >= lo AND v <= hi
			return and(order(opGe, v, lo), order(opLe, v, hi))
		}
		return and(order(opLt, v, lo).not(), order(opGt, v, hi).not()).not() // v < lo OR v > hi
	case opIn, opNotIn:
		s, ok := props[n.kids[0].name]
		if !ok {
			return truthUnknown
		}
		return truthOf(n.contains(s) != (n.op == opNotIn))
	case opIsNull:
		return truthOf(n.kids[0].eval(props).kind == kindNull)
	case opIsNotNull:
		return truthOf(n.kids[0].eval(props).kind != kindNull)
	case opContains, opNotContains, opStartsWith, opNotStartsWith, opEndsWith, opNotEndsWith:
		return n.match(n.kids[0].eval(props))
	}
	return truthUnknown
}

// chain computes an AND (dominant FALSE, otherwise TRUE) or an OR (dominant TRUE, otherwise
// FALSE) over the operands of n, stopping at the first dominant one; an UNKNOWN operand and
// no dominant one give UNKNOWN.
func (n *node) chain(props map[string]string, dominant, otherwise truth) truth {
	result := otherwise
	for _, k := range n.kids {
		switch k.test(props) {
		case dominant:
			return dominant
		case truthUnknown:
			result = truthUnknown
		}
	}
	return result
}

// and is Kleene conjunction of two truths.
func and(a, b truth) truth {
	if a == truthFalse || b == truthFalse {
		return truthFalse
	}
	if a == truthUnknown || b == truthUnknown {
		return truthUnknown
	}
	return truthTrue
}

// contains reports whether s is in the IN list of n.
func (n *node) contains(s string) bool {
	if n.set != nil {
		_, ok := n.set[s]
		return ok
	}
	for _, x := range n.list {
		if x == s {
			return true
		}
	}
	return false
}

// match computes CONTAINS, STARTSWITH, ENDSWITH and their NOT forms as RocketMQ does: an
// empty search string, a NULL or a non-string operand gives FALSE for both the plain and the
// NOT form (not UNKNOWN).
func (n *node) match(v value) truth {
	if n.str == "" || v.kind != kindString {
		return truthFalse
	}
	var found bool
	switch n.op {
	case opContains, opNotContains:
		found = strings.Contains(v.s, n.str)
	case opStartsWith, opNotStartsWith:
		found = strings.HasPrefix(v.s, n.str)
	default:
		found = strings.HasSuffix(v.s, n.str)
	}
	switch n.op {
	case opNotContains, opNotStartsWith, opNotEndsWith:
		found = !found
	}
	return truthOf(found)
}

// equal compares two values for =. NULL on either side gives UNKNOWN; two strings compare as
// strings; a string against a number is read as a number (UNKNOWN when it is not one); a
// string against a boolean is true when it is "true" in any case (Java's Boolean.valueOf); a
// boolean against a number is FALSE.
func equal(l, r value) truth {
	switch {
	case l.kind == kindNull || r.kind == kindNull:
		return truthUnknown
	case l.kind == kindString && r.kind == kindString:
		return truthOf(l.s == r.s)
	case l.kind == kindBool || r.kind == kindBool:
		lb, lok := boolean(l)
		rb, rok := boolean(r)
		if !lok || !rok {
			return truthFalse
		}
		return truthOf(lb == rb)
	}
	c, ok := compareNumbers(l, r)
	if !ok {
		return truthUnknown
	}
	return truthOf(c == 0)
}

// order compares two values for <, <=, > or >=. Both are read as numbers; NULL or a string
// that is not a number gives UNKNOWN.
func order(o op, l, r value) truth {
	c, ok := compareNumbers(l, r)
	if !ok {
		return truthUnknown
	}
	switch o {
	case opLt:
		return truthOf(c < 0)
	case opLe:
		return truthOf(c <= 0)
	case opGt:
		return truthOf(c > 0)
	}
	return truthOf(c >= 0)
}

// compareNumbers reads l and r as numbers and returns -1, 0 or +1. Two longs compare exactly;
// otherwise both are compared as doubles, as Java does.
func compareNumbers(l, r value) (int, bool) {
	l, lok := number(l)
	r, rok := number(r)
	if !lok || !rok {
		return 0, false
	}
	if l.kind == kindInt && r.kind == kindInt {
		return cmp3(l.i < r.i, l.i > r.i), true
	}
	lf, rf := l.float(), r.float()
	return cmp3(lf < rf, lf > rf), true
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

func (v value) float() float64 {
	if v.kind == kindInt {
		return float64(v.i)
	}
	return v.f
}

// boolean reads v as a boolean: a string is true when it is "true" in any case.
func boolean(v value) (bool, bool) {
	switch v.kind {
	case kindBool:
		return v.b, true
	case kindString:
		return stringBool(v.s), true
	}
	return false, false
}

func stringBool(s string) bool { return strings.EqualFold(s, "true") }

// number reads v as a number: numbers as they are, strings by parseNumber.
func number(v value) (value, bool) {
	switch v.kind {
	case kindInt, kindFloat:
		return v, true
	case kindString:
		return parseNumber(v.s)
	}
	return value{}, false
}

const minInt64 = -1 << 63

// parseNumber reads a property value as a number: an optional sign, then an integer (a long)
// or a decimal (5.5, 5., .5, 1e3). An integer too large for a long is read as a double.
// Anything else, including white space, hexadecimal, NaN and Infinity, is not a number. It
// does not allocate unless the text is a decimal out of the double range.
func parseNumber(s string) (value, bool) {
	digits := s
	if digits != "" && (digits[0] == '+' || digits[0] == '-') {
		digits = digits[1:]
	}
	n, isFloat := scanNumber(digits)
	if n == 0 || n != len(digits) {
		return value{}, false
	}
	if !isFloat {
		if i, ok := parseLong(s); ok {
			return value{kind: kindInt, i: i}, true
		}
	}
	f, _ := strconv.ParseFloat(s, 64) // syntax checked; out of range gives ±Inf or 0
	return value{kind: kindFloat, f: f}, true
}

// parseLong reads an optionally signed string of decimal digits as an int64, without
// allocating; it fails on overflow.
func parseLong(s string) (int64, bool) {
	neg := false
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	var u uint64
	for i := 0; i < len(s); i++ {
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(s[i]-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // u == 1<<63 gives minInt64
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}
