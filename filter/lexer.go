package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokenKind is the kind of one lexical token.
type tokenKind uint8

const (
	tokEOF tokenKind = iota
	tokIdent
	tokString
	tokInt
	tokFloat

	tokLParen
	tokRParen
	tokComma
	tokEq // =
	tokNe // <> or !=
	tokLt
	tokLe
	tokGt
	tokGe
	tokPlus
	tokMinus

	tokNot
	tokAnd
	tokOr
	tokBetween
	tokIn
	tokIs
	tokTrue
	tokFalse
	tokNull
	tokContains
	tokStartsWith
	tokEndsWith
)

// keyword returns the token of a reserved word, spelt in any case. Reserved words cannot
// name a property.
func keyword(text string) (tokenKind, bool) {
	if len(text) > len("STARTSWITH") {
		return 0, false
	}
	switch strings.ToUpper(text) {
	case "NOT":
		return tokNot, true
	case "AND":
		return tokAnd, true
	case "OR":
		return tokOr, true
	case "BETWEEN":
		return tokBetween, true
	case "IN":
		return tokIn, true
	case "IS":
		return tokIs, true
	case "TRUE":
		return tokTrue, true
	case "FALSE":
		return tokFalse, true
	case "NULL":
		return tokNull, true
	case "CONTAINS":
		return tokContains, true
	case "STARTSWITH":
		return tokStartsWith, true
	case "ENDSWITH":
		return tokEndsWith, true
	}
	return 0, false
}

// token is one lexical token.
type token struct {
	kind tokenKind
	pos  int    // byte offset of its first character
	end  int    // byte offset just past its last character
	text string // property name, decoded string value, or number text without the L suffix
}

// describe names t for an error message.
func (t token) describe(src string) string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokIdent:
		return "property " + clip(t.text)
	case tokString:
		return "string " + clip(quote(t.text))
	case tokInt, tokFloat:
		return "number " + clip(src[t.pos:t.end])
	}
	if t.kind >= tokNot {
		return strings.ToUpper(src[t.pos:t.end])
	}
	return "'" + src[t.pos:t.end] + "'"
}

// lexer splits an expression into tokens on demand.
type lexer struct {
	src string
	pos int
}

func isDigit(c byte) bool        { return '0' <= c && c <= '9' }
func isLetter(c byte) bool       { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentStart(c byte) bool   { return isLetter(c) || c == '_' || c == '$' }
func isIdentChar(c byte) bool    { return isIdentStart(c) || isDigit(c) }
func isWhitespace(c byte) bool   { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
func (l *lexer) peek(i int) byte { return at(l.src, l.pos+i) }

// at returns s[i], or 0 past the end.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// skip passes over white space and comments (-- to the end of the line, /* ... */).
func (l *lexer) skip() error {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case isWhitespace(c):
			l.pos++
		case c == '-' && l.peek(1) == '-':
			if i := strings.IndexAny(l.src[l.pos:], "\r\n"); i >= 0 {
				l.pos += i
			} else {
				l.pos = len(l.src)
			}
		case c == '/' && l.peek(1) == '*':
			i := strings.Index(l.src[l.pos+2:], "*/")
			if i < 0 {
				return errorAt(l.src, l.pos, "comment /* is not closed by */")
			}
			l.pos += 2 + i + 2
		default:
			return nil
		}
	}
	return nil
}

// next returns the next token, or an error for text that is no token.
func (l *lexer) next() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tokEOF, pos: start, end: start}, nil
	}
	c := l.src[start]
	simple := func(k tokenKind, n int) (token, error) {
		l.pos += n
		return token{kind: k, pos: start, end: l.pos}, nil
	}
	switch {
	case c == '(':
		return simple(tokLParen, 1)
	case c == ')':
		return simple(tokRParen, 1)
	case c == ',':
		return simple(tokComma, 1)
	case c == '=' && l.peek(1) == '=':
		return token{}, errorAt(l.src, start, "'==' is not an operator: use '='")
	case c == '&' && l.peek(1) == '&', c == '|' && l.peek(1) == '|':
		word := "AND"
		if c == '|' {
			word = "OR"
		}
		return token{}, errorAt(l.src, start, fmt.Sprintf("'%s' is not an operator: use %s", l.src[start:start+2], word))
	case c == '=':
		return simple(tokEq, 1)
	case c == '+':
		return simple(tokPlus, 1)
	case c == '-':
		return simple(tokMinus, 1)
	case c == '<':
		switch l.peek(1) {
		case '>':
			return simple(tokNe, 2)
		case '=':
			return simple(tokLe, 2)
		}
		return simple(tokLt, 1)
	case c == '>':
		if l.peek(1) == '=' {
			return simple(tokGe, 2)
		}
		return simple(tokGt, 1)
	case c == '!' && l.peek(1) == '=':
		return simple(tokNe, 2)
	case c == '\'':
		return l.string()
	case isDigit(c) || c == '.' && isDigit(l.peek(1)):
		return l.number()
	case isIdentStart(c):
		return l.ident(), nil
	}
	r, _ := utf8.DecodeRuneInString(l.src[start:])
	if r == utf8.RuneError {
		return token{}, errorAt(l.src, start, fmt.Sprintf("unexpected byte 0x%02x", c))
	}
	if c == '"' {
		return token{}, errorAt(l.src, start, `unexpected '"': string literals are quoted with ' (write '' for a quote inside)`)
	}
	return token{}, errorAt(l.src, start, fmt.Sprintf("unexpected character %q", r))
}

// ident scans a property name or a reserved word. A dot may join name parts (a.b.c).
func (l *lexer) ident() token {
	start := l.pos
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		if isIdentChar(c) || c == '.' && isIdentChar(l.peek(1)) {
			l.pos++
			continue
		}
		break
	}
	text := l.src[start:l.pos]
	if k, ok := keyword(text); ok {
		return token{kind: k, pos: start, end: l.pos}
	}
	return token{kind: tokIdent, pos: start, end: l.pos, text: text}
}

// string scans a quoted string literal, in which a doubled quote stands for one quote.
func (l *lexer) string() (token, error) {
	start := l.pos
	l.pos++ // opening quote
	var b strings.Builder
	from := l.pos
	for {
		i := strings.IndexByte(l.src[l.pos:], '\'')
		if i < 0 {
			return token{}, errorAt(l.src, start, "string literal is not closed by '")
		}
		l.pos += i + 1
		if l.peek(0) != '\'' {
			break
		}
		b.WriteString(l.src[from:l.pos]) // keeps one quote of the pair
		l.pos++
		from = l.pos
	}
	text := l.src[from : l.pos-1]
	if b.Len() > 0 {
		b.WriteString(text)
		text = b.String()
	}
	return token{kind: tokString, pos: start, end: l.pos, text: text}, nil
}

// number scans an integer (digits, optional L suffix) or a decimal (5.5, 5., .5, 5E10, 5.5e-3).
func (l *lexer) number() (token, error) {
	start := l.pos
	n, isFloat := scanNumber(l.src[start:])
	if n == 0 {
		return token{}, errorAt(l.src, start, "malformed number")
	}
	l.pos += n
	kind, text := tokInt, l.src[start:l.pos]
	if isFloat {
		kind = tokFloat
	} else if c := l.peek(0); c == 'l' || c == 'L' {
		l.pos++
	}
	if c := l.peek(0); isIdentChar(c) || c == '.' {
		return token{}, errorAt(l.src, start, fmt.Sprintf("malformed number %q", clip(l.src[start:l.pos+1])))
	}
	return token{kind: kind, pos: start, end: l.pos, text: text}, nil
}

// scanNumber measures the unsigned number at the start of s: digits with an optional fraction
// and exponent. It returns 0 when s does not start with one, and whether it has a fraction or
// exponent.
func scanNumber(s string) (n int, isFloat bool) {
	digits := 0
	for n < len(s) && isDigit(s[n]) {
		n++
		digits++
	}
	if n < len(s) && s[n] == '.' {
		isFloat = true
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		e := n + 1
		if e < len(s) && (s[e] == '+' || s[e] == '-') {
			e++
		}
		expDigits := 0
		for e < len(s) && isDigit(s[e]) {
			e++
			expDigits++
		}
		if expDigits == 0 {
			return 0, false
		}
		n, isFloat = e, true
	}
	return n, isFloat
}
