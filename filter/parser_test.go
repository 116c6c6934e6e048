package filter

import (
	"errors"
	"strings"
	"testing"
)

// mustCompile compiles expr and checks that its canonical form compiles to itself.
func mustCompile(t testing.TB, expr string) *Expression {
	t.Helper()
	e, err := Compile(expr)
	if err != nil {
		t.Fatalf("Compile(%q): %v", expr, err)
	}
	again, err := Compile(e.String())
	if err != nil {
		t.Fatalf("Compile(%q) gave %q, which does not compile: %v", expr, e, err)
	}
	if again.String() != e.String() {
		t.Fatalf("Compile(%q) gave %q, which compiles to %q", expr, e, again)
	}
	return e
}

func TestCompileCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// comparisons, keywords in any case, white space and comments
		{"a=3 and b<>4 And c>5 AND d<=4", "a = 3 AND b <> 4 AND c > 5 AND d <= 4"},
		{"a=3  and    b<>4 And c>5 AND d<=4", "a = 3 AND b <> 4 AND c > 5 AND d <= 4"},
		{"a=3 or b<>4 Or c>5 OR d<=4", "a = 3 OR b <> 4 OR c > 5 OR d <= 4"},
		{"a != 'x'", "a <> 'x'"},
		{"a>=1 AND a<1", "a >= 1 AND a < 1"},
		{"\ta\r\n=\f1", "a = 1"},
		{"a = 1 -- the rest is a comment", "a = 1"},
		{"a = 1 --c\n AND b = 2", "a = 1 AND b = 2"},
		{"a /* inline */ = /**/1", "a = 1"},
		{"A Is NoT nUlL", "A IS NOT NULL"},
		{"a is null", "a IS NULL"},
		{"a<=now", "a <= now"},
		// precedence: sign > comparison > equality > NOT > AND > OR
		{"a=1 or b=2 and c=3", "a = 1 OR b = 2 AND c = 3"},
		{"(a=1 or b=2) and c=3", "(a = 1 OR b = 2) AND c = 3"},
		{"a=1 and (b=2 or c=3) or d=4", "a = 1 AND (b = 2 OR c = 3) OR d = 4"},
		{"not a=1 and b=2", "NOT (a = 1) AND b = 2"},
		{"not (a=1 and b=2)", "NOT (a = 1 AND b = 2)"},
		{"NOT NOT a", "NOT (NOT a)"},
		{"not a is null", "NOT (a IS NULL)"},
		{"a = 1 = TRUE", "(a = 1) = TRUE"},
		{"(a > 1) = TRUE", "(a > 1) = TRUE"},
		{"a = 1 > 2", "a = (1 > 2)"},
		{"a is null is null", "(a IS NULL) IS NULL"},
		{"a in ('x') = false", "(a IN ('x')) = FALSE"},
		{"(NOT a) = TRUE", "(NOT a) = TRUE"},
		// redundant parentheses and chains of one operator flatten
		{"((a = 1))", "a = 1"},
		{"(a = 1 AND b = 2) AND (c = 3 AND d = 4)", "a = 1 AND b = 2 AND c = 3 AND d = 4"},
		{"a or (b or c)", "a OR b OR c"},
		{"(a or b) and (c or d)", "(a OR b) AND (c OR d)"},
		// predicates
		{"a in ('3', '4', '5')", "a IN ('3', '4', '5')"},
		{"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))", "a NOT IN ('6', '4', '5') OR b IN ('3', '4', '5')"},
		{"(a between 2 and 10) AND (b not between 6 and 9)", "a BETWEEN 2 AND 10 AND b NOT BETWEEN 6 AND 9"},
		{"a between b and c", "a BETWEEN b AND c"},
		{"a=3 and b contains 'xxx' and c not contains 'xxx'", "a = 3 AND b CONTAINS 'xxx' AND c NOT CONTAINS 'xxx'"},
		{"a startswith 'x' or a not startswith 'y'", "a STARTSWITH 'x' OR a NOT STARTSWITH 'y'"},
		{"a endswith 'x' or a not endswith 'y'", "a ENDSWITH 'x' OR a NOT ENDSWITH 'y'"},
		{"'axb' contains 'x'", "'axb' CONTAINS 'x'"},
		// literals
		{"a > 5L", "a > 5"},
		{"a > 007", "a > 7"},
		{"a > .5", "a > 0.5"},
		{"a > 5.", "a > 5.0"},
		{"a > 5E10", "a > 5e+10"},
		{"a > 5.e10", "a > 5e+10"},
		{"a > 1.5e-7", "a > 1.5e-07"},
		{"a > 1e-400", "a > 0.0"},
		{"a > 0.0", "a > 0.0"},
		{"a > -0.0", "a > -0.0"},
		{"a > - 5", "a > -5"},
		{"a > -(-5)", "a > 5"},
		{"a > -(5.5)", "a > -5.5"},
		{"a > +5", "a > 5"},
		{"a > -b", "a > -b"},
		{"a > - -b", "a > -(-b)"},
		{"a > -(-(-b))", "a > -(-(-b))"},
		{"a > +b", "a > b"},
		{"a > 9223372036854775807", "a > 9223372036854775807"},
		{"a > -9223372036854775808", "a > -9223372036854775808"},
		{"a = 'it''s'", "a = 'it''s'"},
		{"a = ''", "a = ''"},
		{"a = ''''", "a = ''''"},
		{"TAGS is not null and TAGS='''''tag'''''", "TAGS IS NOT NULL AND TAGS = '''''tag'''''"},
		{"a = 'multi\nline -- not a comment /* nor this */'", "a = 'multi\nline -- not a comment /* nor this */'"},
		{"a = 'héllo'", "a = 'héllo'"},
		{"a = true or b = False", "a = TRUE OR b = FALSE"},
		{"TRUE", "TRUE"},
		{"false", "FALSE"},
		{"null", "NULL"},
		{"NULL IS NULL", "NULL IS NULL"},
		{"TRUE AND NULL", "TRUE AND NULL"},
		// properties
		{"a", "a"},
		{"NOT a", "NOT a"},
		{"a AND b", "a AND b"},
		{"a.b.c = TRUE", "a.b.c = TRUE"},
		{"a.5 = 1", "a.5 = 1"},
		{"$x_1 = 1", "$x_1 = 1"},
		{"_ = 1", "_ = 1"},
		{"Note = 1", "Note = 1"}, // NOT is a prefix, not the word
		{"a = b", "a = b"},
		{"1 < 2", "1 < 2"},
	} {
		e := mustCompile(t, tc.in)
		if got := e.String(); got != tc.want {
			t.Errorf("Compile(%q).String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "at column 1: expression is empty"},
		{"  -- only a comment", "at column 20: expression is empty"},
		{"a > ", "at column 5: expected a value after '>'"},
		{"a >", "at column 4: expected a value after '>'"},
		{"a > AND b", "at column 5: expected a value after '>', found AND"},
		{"a and between 2 and 10", "at column 7: expected a value after AND, found BETWEEN"},
		{"a = 1 AND", "at column 10: expected a value after AND"},
		{"(", "at column 2: expected a value after '('"},
		{")", "at column 1: expected a value, found ')'"},
		{"(a = 1", "at column 7: expected ')' to close the '(' at column 1 after number 1"},
		{"a = (1 > 2 AND b", "at column 17: expected ')' to close the '(' at column 5 after property b"},
		{"a = 1)", "at column 6: unexpected ')' after number 1"},
		{"a = 1 b", "at column 7: unexpected property b after number 1"},
		{"a b", "at column 3: unexpected property b after property a"},
		{"a = 'abc", "at column 5: string literal is not closed by '"},
		{"a = 'it''s", "at column 5: string literal is not closed by '"},
		{"a = 1 /* x", "at column 7: comment /* is not closed by */"},
		{`a = "x"`, `at column 5: unexpected '"': string literals are quoted with ' (write '' for a quote inside)`},
		{"a == 1", "at column 3: '==' is not an operator: use '='"},
		{"a && b", "at column 3: '&&' is not an operator: use AND"},
		{"a || b", "at column 3: '||' is not an operator: use OR"},
		{"a # 1", "at column 3: unexpected character '#'"},
		{"a = 1 \xff", "at column 7: unexpected byte 0xff"},
		{"a..b = 1", "at column 2: unexpected character '.'"},
		{"a. = 1", "at column 2: unexpected character '.'"},
		{"a ≥ 1", "at column 3: unexpected character '≥'"},
		{"a = 'é' AND > 1", "at column 13: expected a value after AND, found '>'"},
		{"a = 1 AND\nb > ", "at line 2, column 5: expected a value after '>'"},
		{"a = 1 AND\n\n  b > + AND", "at line 3, column 9: expected a value after '+', found AND"},
		// numbers
		{"a > 100000000000000000000000", "at column 5: integer 100000000000000000000000 is out of range (a long holds -9223372036854775808 to 9223372036854775807)"},
		{"a > 9223372036854775808", "at column 5: integer 9223372036854775808 is out of range (a long holds -9223372036854775808 to 9223372036854775807)"},
		{"a > -(-9223372036854775808)", "at column 5: integer --9223372036854775808 is out of range (a long holds -9223372036854775808 to 9223372036854775807)"},
		{"a > 1e400", "at column 5: decimal 1e400 is out of range (a double holds at most 1.7976931348623157e+308)"},
		{"a > 5x", `at column 5: malformed number "5x"`},
		{"a > 5e", "at column 5: malformed number"},
		{"a > 5e+", "at column 5: malformed number"},
		{"a > 5.5L", `at column 5: malformed number "5.5L"`},
		{"a > 1.2.3", `at column 5: malformed number "1.2."`},
		// conditions where a condition is needed
		{"5", "at column 1: the expression must be a condition, not the number 5"},
		{"'x'", "at column 1: the expression must be a condition, not the string 'x'"},
		{"-a", "at column 1: the expression must be a condition, not the number -a"},
		{"a AND 5", "at column 7: each side of AND must be a condition, not the number 5"},
		{"'x' OR a", "at column 1: each side of OR must be a condition, not the string 'x'"},
		{"NOT 'x'", "at column 5: the operand of NOT must be a condition, not the string 'x'"},
		// operand types
		{"a > 'x'", "at column 5: the string 'x' cannot be compared with '>': only numbers and properties can"},
		{"a >= TRUE", "at column 6: the boolean TRUE cannot be compared with '>=': only numbers and properties can"},
		{"a < NULL", "at column 5: NULL cannot be compared with '<': only numbers and properties can"},
		{"(a > 1) > 2", "at column 2: the condition a > 1 cannot be compared with '>': only numbers and properties can"},
		{"NOT a > 1 > 2", "at column 5: the condition a > 1 cannot be compared with '>': only numbers and properties can"},
		{"a = NULL", "at column 5: NULL cannot be compared with '=': use IS NULL or IS NOT NULL"},
		{"NULL <> a", "at column 1: NULL cannot be compared with '<>': use IS NULL or IS NOT NULL"},
		{"1 = 'a'", "at column 3: the number 1 cannot be compared with the string 'a'"},
		{"TRUE = 1", "at column 6: the boolean TRUE cannot be compared with the number 1"},
		{"(a = 1) = 5", "at column 9: the condition a = 1 cannot be compared with the number 5"},
		{"(a > 1) = 'x'", "at column 9: the condition a > 1 cannot be compared with the string 'x'"},
		{"a IS 5", "at column 6: expected NULL after IS, found number 5"},
		{"a IS NOT 5", "at column 10: expected NULL after NOT, found number 5"},
		{"a IS", "at column 5: expected NULL after IS"},
		{"a NOT LIKE 'x'", "at column 7: expected BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT, found property LIKE"},
		{"a NOT = 1", "at column 7: expected BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT, found '='"},
		{"a IN 'x'", "at column 6: expected '(' after IN, found string 'x'"},
		{"a IN ()", "at column 7: expected a string literal after '(', found ')'"},
		{"a IN ('x' 'y')", "at column 11: expected ',' or ')' after string 'x', found string 'y'"},
		{"a IN ('x',)", "at column 11: expected a string literal after ',', found ')'"},
		{"a in (3)", "at column 7: expected a string literal after '(', found number 3"},
		{"5 IN ('x')", "at column 3: IN needs a property on its left, not the number 5"},
		{"'a' NOT IN ('x')", "at column 5: NOT IN needs a property on its left, not the string 'a'"},
		{"value contains x", "at column 16: expected a string literal after CONTAINS, found property x"},
		{"value not contains 123", "at column 20: expected a string literal after CONTAINS, found number 123"},
		{"a startswith", "at column 13: expected a string literal after STARTSWITH"},
		{"5 CONTAINS 'x'", "at column 3: CONTAINS needs a property or a string on its left, not the number 5"},
		{"(a = 1) NOT ENDSWITH 'x'", "at column 9: NOT ENDSWITH needs a property or a string on its left, not the condition a = 1"},
		{" a between 10 and 0", "at column 12: BETWEEN lower bound 10 is greater than upper bound 0"},
		{"a between 1.5 and -1", "at column 11: BETWEEN lower bound 1.5 is greater than upper bound -1"},
		{"a BETWEEN 1 OR 2", "at column 13: expected AND after number 1, found OR"},
		{"a BETWEEN 'x' AND 2", "at column 11: the string 'x' cannot be compared with 'BETWEEN': only numbers and properties can"},
		{"TRUE NOT BETWEEN 1 AND 2", "at column 1: the boolean TRUE cannot be compared with 'NOT BETWEEN': only numbers and properties can"},
		{"-'x' = a", "at column 1: sign '-' needs a number or a property, not the string 'x'"},
		{"a = +TRUE", "at column 5: sign '+' needs a number or a property, not the boolean TRUE"},
		{"a = 1 AND b > '" + strings.Repeat("x", 1000) + "'", "at column 15: the string 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... cannot be compared with '>': only numbers and properties can"},
		{"(a = '" + strings.Repeat("é", 1000) + "') > 1", "at column 2: the condition a = 'éééééééééééééééééééééééééééééééééééééééé... cannot be compared with '>': only numbers and properties can"},
		{"a > 1 " + strings.Repeat("b", 1000), "at column 7: unexpected property bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb... after number 1"},
		{"-(a > 1) = 1", "at column 1: sign '-' needs a number or a property, not the condition a > 1"},
	} {
		_, err := Compile(tc.in)
		if err == nil {
			t.Errorf("Compile(%q) succeeded, want error %q", tc.in, tc.want)
			continue
		}
		if got, want := err.Error(), "filter: "+tc.want; got != want {
			t.Errorf("Compile(%q):\n got %s\nwant %s", tc.in, got, want)
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%q) error %T is not a *SyntaxError", tc.in, err)
		}
	}
}

func TestSyntaxErrorPosition(t *testing.T) {
	_, err := Compile("a = 1 AND\n  b = 'é' AND c >")
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *SyntaxError", err)
	}
	if se.Offset != len("a = 1 AND\n  b = 'é' AND c >") || se.Line != 2 || se.Column != 18 {
		t.Fatalf("got offset %d line %d column %d (%v)", se.Offset, se.Line, se.Column, se)
	}
}

func TestCompileLimits(t *testing.T) {
	long := strings.Repeat(" ", MaxLength) + "a"
	if _, err := Compile(long); err == nil || err.Error() != "filter: expression is 65537 bytes long, more than the limit of 65536" {
		t.Errorf("over-long expression: %v", err)
	}
	// Exactly MaxLength bytes compiles.
	mustCompile(t, strings.Repeat(" ", MaxLength-1)+"a")
	// A long IN list is fine: it adds no depth.
	list := make([]string, 5000)
	for i := range list {
		list[i] = "'v'"
	}
	mustCompile(t, "a IN ("+strings.Join(list, ",")+")")
	// A canonical form longer than the limit is refused, so String() always compiles again.
	if _, err := Compile("a IN ('v'" + strings.Repeat(",'v'", MaxLength/4-3) + ")"); err == nil ||
		!strings.HasPrefix(err.Error(), "filter: canonical form of the expression is") {
		t.Errorf("expression with over-long canonical form: %v", err)
	}

	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "a" + strings.Repeat(close, n)
	}
	for _, tc := range []struct {
		in   string
		want string // "" = compiles
	}{
		{nest("(", ")", maxNesting), ""},
		{nest("(", ")", maxNesting+1), "at column 129: parentheses, NOT and signs nested more than 128 deep"},
		{nest("(", ")", 1_000_000)[:MaxLength], "at column 129: parentheses, NOT and signs nested more than 128 deep"},
		{nest("NOT ", "", MaxDepth-1), ""},
		{nest("NOT ", "", MaxDepth), "at column 1: expression nested more than 64 levels deep"},
		{nest("NOT ", "", 100_000)[:MaxLength-1] + "a", "at column 513: parentheses, NOT and signs nested more than 128 deep"},
		{"b > " + nest("- ", "", MaxDepth-2), ""},
		{"b > " + nest("- ", "", MaxDepth-1), "at column 1: expression nested more than 64 levels deep"},
		{"b > " + nest("-(", ")", MaxDepth), "at column 5: expression nested more than 64 levels deep"},
		{"b > " + strings.Repeat("-", 1000) + "5", "at column 1006: expected a value after '>'"}, // "--" starts a comment
		{"b > " + strings.Repeat("- ", 1000) + "5", "at column 261: parentheses, NOT and signs nested more than 128 deep"},
		{"a = 1" + strings.Repeat(" = TRUE", MaxDepth-2), ""},
		{"a = 1" + strings.Repeat(" = TRUE", MaxDepth-1), "at column 1: expression nested more than 64 levels deep"},
		{"a IS NULL" + strings.Repeat(" IS NULL", MaxDepth), "at column 1: expression nested more than 64 levels deep"},
		{strings.Repeat("a = 1 OR ", 5000) + "a = 1", ""},
		// a parenthesised chain of the same operator merges without adding a level
		{strings.Repeat("a OR (", MaxDepth) + "a" + strings.Repeat(")", MaxDepth), ""},
		{strings.Repeat("a OR (b AND (", MaxDepth/2-1) + "a" + strings.Repeat("))", MaxDepth/2-1), ""},
		{strings.Repeat("a OR (b AND (", MaxDepth/2) + "a" + strings.Repeat("))", MaxDepth/2), "at column 1: expression nested more than 64 levels deep"},
		{strings.Repeat("NOT (a AND ", MaxDepth/2) + "b" + strings.Repeat(")", MaxDepth/2), "at column 1: expression nested more than 64 levels deep"},
	} {
		_, err := Compile(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Compile(%.40q...): %v", tc.in, err)
		case tc.want == "":
			mustCompile(t, tc.in)
		case err == nil:
			t.Errorf("Compile(%.40q...) succeeded, want %q", tc.in, tc.want)
		case err.Error() != "filter: "+tc.want:
			t.Errorf("Compile(%.40q...):\n got %v\nwant filter: %s", tc.in, err, tc.want)
		}
	}
}
