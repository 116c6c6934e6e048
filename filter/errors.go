package filter

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// SyntaxError reports an expression that does not compile: a token that is no token, a
// missing or misplaced operand, an operand of the wrong type, or an expression over the limits.
// Compile returns it as error; use errors.As to read the position.
type SyntaxError struct {
	// Offset is the byte offset in the expression where the problem is (len(expr) for a
	// problem at its end), or -1 when the problem has no position.
	Offset int
	// Line and Column locate Offset, both from 1; Column counts characters, not bytes. Both
	// are 0 when Offset is -1.
	Line, Column int
	// Msg says what is wrong, e.g. "expected a value after '>'".
	Msg string
}

// Error returns "filter: at column C: msg", with the line too when the expression has
// several lines and the problem is not on the first.
func (e *SyntaxError) Error() string {
	switch {
	case e.Offset < 0:
		return "filter: " + e.Msg
	case e.Line > 1:
		return fmt.Sprintf("filter: at line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("filter: at column %d: %s", e.Column, e.Msg)
}

// errorAt returns a SyntaxError for byte offset pos of src.
func errorAt(src string, pos int, msg string) *SyntaxError {
	pos = min(max(pos, 0), len(src))
	line, lineStart := 1, 0
	if i := strings.LastIndexByte(src[:pos], '\n'); i >= 0 {
		line = 1 + strings.Count(src[:pos], "\n")
		lineStart = i + 1
	}
	return &SyntaxError{Offset: pos, Line: line, Column: 1 + utf8.RuneCountInString(src[lineStart:pos]), Msg: msg}
}

// clipLength is the most characters of expression text an error message quotes.
const clipLength = 48

// clip shortens s to clipLength characters for an error message, marking the cut with "...".
func clip(s string) string {
	if utf8.RuneCountInString(s) <= clipLength {
		return s
	}
	n := 0
	for i := range s {
		if n == clipLength-3 {
			return s[:i] + "..."
		}
		n++
	}
	return s
}
