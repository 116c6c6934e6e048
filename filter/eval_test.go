package filter

import (
	"fmt"
	"testing"
)

// p builds a property map from name, value pairs.
func p(kv ...string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// truth names for the tables.
const (
	T = truthTrue
	F = truthFalse
	U = truthUnknown
)

func (t truth) String() string {
	return [...]string{"UNKNOWN", "FALSE", "TRUE"}[t]
}

type evalCase struct {
	expr  string
	props map[string]string
	want  truth
}

// checkEval compiles each expression and checks its three-valued result, that Evaluate
// agrees (true only for TRUE), and that the canonical form gives the same result.
func checkEval(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		e := mustCompile(t, tc.expr)
		if got := e.root.test(tc.props); got != tc.want {
			t.Errorf("%s with %v = %v, want %v", tc.expr, tc.props, got, tc.want)
		}
		if got := e.Evaluate(tc.props); got != (tc.want == T) {
			t.Errorf("Evaluate(%s, %v) = %v, want %v", tc.expr, tc.props, got, tc.want == T)
		}
		canon := mustCompile(t, e.String())
		if got := canon.root.test(tc.props); got != tc.want {
			t.Errorf("canonical %s with %v = %v, want %v", canon, tc.props, got, tc.want)
		}
	}
}

func TestEvaluateEquality(t *testing.T) {
	checkEval(t, []evalCase{
		{"a = 'x'", p("a", "x"), T},
		{"a = 'x'", p("a", "y"), F},
		{"a = 'x'", p("a", "X"), F},
		{"a = 'x'", p(), U},
		{"a = 'x'", nil, U},
		{"a <> 'x'", p("a", "y"), T},
		{"a <> 'x'", p("a", "x"), F},
		{"a <> 'x'", p(), U},
		{"a != 'x'", p("a", "y"), T},
		{"'x' = a", p("a", "x"), T},
		{"'x' = a", p(), U},
		{"'x' <> a", p(), U},
		{"a = ''", p("a", ""), T},
		{"a = ''", p(), U},
		{"a = 'it''s'", p("a", "it's"), T},
		{"a = b", p("a", "3.14", "b", "3.14"), T},
		{"a = b", p("a", "1", "b", "1.0"), F}, // two strings compare as strings
		{"a <> b", p("a", "3.14", "b", "3.141"), T},
		{"a = b", p("a", "1"), U},
		{"'x' = 'x'", nil, T},
		{"a.b = 'x'", p("a.b", "x"), T},
	})
}

func TestEvaluateNumbers(t *testing.T) {
	checkEval(t, []evalCase{
		{"a = 3", p("a", "3"), T},
		{"a = 3", p("a", "3.0"), T},
		{"a = 3", p("a", "03"), T},
		{"a = 3", p("a", "+3"), T},
		{"a = 3", p("a", "3e0"), T},
		{"a = 3", p("a", "4"), F},
		{"a = 3", p("a", "x"), U},
		{"a = 3", p("a", " 3"), U},
		{"a = 3", p("a", ""), U},
		{"a = 3", p(), U},
		{"a <> 3", p("a", "x"), U},
		{"a <> 3", p("a", "4"), T},
		{"a = 3.0", p("a", "3"), T},
		{"a = -3", p("a", "-3"), T},
		{"a > 3", p("a", "4"), T},
		{"a > 3", p("a", "3"), F},
		{"a > 3", p("a", "3.5"), T},
		{"a > 3", p("a", "-1"), F},
		{"a > 3", p("a", "1e1"), T},
		{"a > 3", p("a", ".5"), F},
		{"a > 3", p("a", "abc"), U},
		{"a > 3", p("a", "0x10"), U},
		{"a > 3", p("a", "NaN"), U},
		{"a > 3", p("a", "Infinity"), U},
		{"a > 3", p("a", "inf"), U},
		{"a > 3", p("a", "1_000"), U},
		{"a > 3", p("a", "5L"), U},
		{"a > 3", p("a", "-"), U},
		{"a > 3", p("a", "1e400"), T}, // out of the double range: +Inf
		{"a > 3", p(), U},
		{"a >= 3", p("a", "3"), T},
		{"a >= 3", p("a", "2.999"), F},
		{"a < 3", p("a", "2"), T},
		{"a < 3", p("a", "3"), F},
		{"a <= 3", p("a", "3"), T},
		{"a <= 3", p("a", "3.0001"), F},
		{"a < -5", p("a", "-6"), T},
		{"a > 3.14", p("a", "3.1415"), T},
		{"a > 3.1E10", p("a", "3.1415E10"), T},
		{"a > b", p("a", "10", "b", "20"), F},
		{"a > b", p("a", "20", "b", "10"), T},
		{"a > b", p("a", "20", "b", "x"), U},
		{"a > b", p("a", "20"), U},
		// longs compare exactly, mixed as doubles
		{"a > 9223372036854775806", p("a", "9223372036854775807"), T},
		{"a = 9007199254740993", p("a", "9007199254740992"), F},
		{"a = 9007199254740993.0", p("a", "9007199254740992"), T},
		{"a > 9223372036854775807", p("a", "99999999999999999999"), T},
		{"a < -9223372036854775808", p("a", "-1e19"), T},
		{"a < -9223372036854775808", p("a", "-9223372036854775809"), F}, // equal as doubles
		{"a = -9223372036854775808", p("a", "-9223372036854775808"), T},
		// signs
		{"-a > 5", p("a", "-6"), T},
		{"-a > 5", p("a", "6"), F},
		{"-a > 5", p("a", "-6.5"), T},
		{"-a > 5", p("a", "x"), U},
		{"-a > 5", p(), U},
		{"-(-a) = 5", p("a", "5"), T},
		{"-a > 0", p("a", "-9223372036854775808"), T}, // no long overflow: read as a double
		{"a > -b", p("a", "1", "b", "2"), T},
		{"+a = 5", p("a", "5"), T},
		// constants
		{"1 < 2", nil, T},
		{"2.5 > 2", nil, T},
		{"1 = 1.0", nil, T},
		{"-0.0 = 0", nil, T},
		{"1 <> 2", nil, T},
	})
}

func TestEvaluateBooleans(t *testing.T) {
	checkEval(t, []evalCase{
		{"TRUE", nil, T},
		{"FALSE", nil, F},
		{"NULL", nil, U},
		{"a = TRUE", p("a", "true"), T},
		{"a = TRUE", p("a", "TRUE"), T},
		{"a = TRUE", p("a", "True"), T},
		{"a = TRUE", p("a", "yes"), F},
		{"a = TRUE", p("a", "1"), F},
		{"a = TRUE", p(), U},
		{"a = FALSE", p("a", "false"), T},
		{"a = FALSE", p("a", "xyz"), T}, // Java's Boolean.valueOf: anything but "true" is false
		{"a <> FALSE", p("a", "true"), T},
		{"TRUE = TRUE", nil, T},
		{"TRUE = FALSE", nil, F},
		// a property used as a condition
		{"a", p("a", "true"), T},
		{"a", p("a", "false"), F},
		{"a", p("a", "x"), F},
		{"a", p(), U},
		{"NOT a", p("a", "x"), T},
		{"NOT a", p(), U},
		{"a AND b", p("a", "true", "b", "TRUE"), T},
		{"a OR b", p("b", "true"), T},
		// conditions compared
		{"(a > 1) = TRUE", p("a", "2"), T},
		{"(a > 1) = TRUE", p("a", "0"), F},
		{"(a > 1) = TRUE", p(), U},
		{"(a > 1) = FALSE", p("a", "0"), T},
		{"(a > 1) = b", p("a", "2", "b", "TRUE"), T},
		{"(a > 1) = b", p("a", "2", "b", "5"), F},
		{"a = (1 > 2)", p("a", "false"), T},
		{"(NOT a) = TRUE", p("a", "x"), T},
		{"(a = 1) = (b = 1)", p("a", "2", "b", "3"), T},
		{"(a = 1) = (b = 1)", p("a", "2"), U},
	})
}

func TestEvaluateLogic(t *testing.T) {
	// Kleene's three-valued logic, with TRUE, FALSE and NULL (UNKNOWN) literals.
	lit := map[truth]string{T: "TRUE", F: "FALSE", U: "NULL"}
	and := [3][3]truth{U: {U, F, U}, F: {F, F, F}, T: {U, F, T}}
	or := [3][3]truth{U: {U, U, T}, F: {U, F, T}, T: {T, T, T}}
	not := [3]truth{U: U, F: T, T: F}
	var cases []evalCase
	for _, a := range []truth{U, F, T} {
		cases = append(cases, evalCase{"NOT " + lit[a], nil, not[a]})
		cases = append(cases, evalCase{"NOT (" + lit[a] + ")", nil, not[a]})
		for _, b := range []truth{U, F, T} {
			cases = append(cases,
				evalCase{lit[a] + " AND " + lit[b], nil, and[a][b]},
				evalCase{lit[a] + " OR " + lit[b], nil, or[a][b]},
			)
		}
	}
	cases = append(cases, []evalCase{
		{"NOT NOT NULL", nil, U},
		{"NOT NOT TRUE", nil, T},
		{"TRUE AND TRUE AND NULL AND TRUE", nil, U},
		{"TRUE AND NULL AND FALSE", nil, F},
		{"FALSE OR NULL OR TRUE", nil, T},
		{"FALSE OR FALSE OR NULL", nil, U},
		// the same with missing properties
		{"a = 1 AND b = 1", p("b", "1"), U},
		{"a = 1 AND b = 1", p("b", "2"), F},
		{"a = 1 OR b = 1", p("b", "1"), T},
		{"a = 1 OR b = 1", p("b", "2"), U},
		{"NOT (a = 1)", p(), U},
		{"NOT (a = 1 OR b = 1)", p("a", "2", "b", "2"), T},
		// a value that is not a number spoils only its own comparison
		{"a = 5 OR b = 'x'", p("a", "abc", "b", "x"), T},
		{"a > 5 AND b = 'x'", p("a", "abc", "b", "y"), F},
	}...)
	checkEval(t, cases)
}

func TestEvaluatePrecedence(t *testing.T) {
	checkEval(t, []evalCase{
		// OR is weakest: a = 1 OR (b = 1 AND c = 1)
		{"a = 1 OR b = 1 AND c = 1", p("a", "1", "b", "0", "c", "0"), T},
		{"(a = 1 OR b = 1) AND c = 1", p("a", "1", "b", "0", "c", "0"), F},
		{"a = 1 AND b = 1 OR c = 1", p("a", "0", "b", "0", "c", "1"), T},
		{"a = 1 AND (b = 1 OR c = 1)", p("a", "0", "b", "0", "c", "1"), F},
		// NOT binds tighter than AND, looser than comparisons
		{"NOT a = 1 AND b = 1", p("a", "2", "b", "1"), T},
		{"NOT a = 1 AND b = 1", p("a", "1", "b", "1"), F},
		{"NOT a = 1 OR b = 1", p("a", "1", "b", "1"), T},
		{"NOT (a = 1 AND b = 1)", p("a", "1", "b", "2"), T},
		{"NOT a IS NULL", p("a", "x"), T},
		{"NOT a IS NULL", p(), F},
		{"NOT a BETWEEN 1 AND 3", p("a", "5"), T},
		{"NOT a IN ('x')", p("a", "y"), T},
		{"NOT NOT a = 1", p("a", "1"), T},
		// BETWEEN takes its AND before the logical AND
		{"a BETWEEN 1 AND 3 AND b = 1", p("a", "2", "b", "1"), T},
		{"a BETWEEN 1 AND 3 AND b = 1", p("a", "2", "b", "2"), F},
		// sign before comparison
		{"-a < -1", p("a", "2"), T},
		// comparison before equality
		{"a = 1 > 0", p("a", "true"), T},
		{"a > 1 = TRUE", p("a", "2"), T},
	})
}

func TestEvaluateBetween(t *testing.T) {
	checkEval(t, []evalCase{
		{"a between 2 and 10", p("a", "2"), T},
		{"a between 2 and 10", p("a", "10"), T},
		{"a between 2 and 10", p("a", "3"), T},
		{"a between 2 and 10", p("a", "2.5"), T},
		{"a between 2 and 10", p("a", "1"), F},
		{"a between 2 and 10", p("a", "11"), F},
		{"a between 2 and 10", p("a", "10.01"), F},
		{"a between 2 and 10", p(), U},
		{"a between 2 and 10", p("a", "abc"), U},
		{"a not between 2 and 10", p("a", "1"), T},
		{"a not between 2 and 10", p("a", "11"), T},
		{"a not between 2 and 10", p("a", "2"), F},
		{"a not between 2 and 10", p("a", "10"), F},
		{"a not between 2 and 10", p(), U},
		{"a not between 10 and 2", p("a", "5"), T}, // an empty range is allowed for NOT BETWEEN
		{"a between 1.5 and 2.5", p("a", "2"), T},
		{"a between -5 and -1", p("a", "-3"), T},
		{"a between 5 and 5", p("a", "5"), T},
		{"a between b and c", p("a", "5", "b", "1", "c", "10"), T},
		{"a between b and c", p("a", "5", "c", "10"), U},  // UNKNOWN AND TRUE
		{"a between b and c", p("a", "11", "c", "10"), F}, // UNKNOWN AND FALSE
		{"a not between b and c", p("a", "11", "c", "10"), T},
		{"a not between b and c", p("a", "5", "c", "10"), U},
		{"a between c and b", p("a", "5", "b", "1", "c", "10"), F}, // empty range of properties
	})
}

func TestEvaluateIn(t *testing.T) {
	long := "a IN ('v0', 'v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'v7', 'v8', 'v9')"
	if e := mustCompile(t, long); e.root.set == nil {
		t.Fatalf("an IN list of 10 is not a set")
	}
	checkEval(t, []evalCase{
		{"a in ('3', '4', '5')", p("a", "3"), T},
		{"a in ('3', '4', '5')", p("a", "5"), T},
		{"a in ('3', '4', '5')", p("a", "8"), F},
		{"a in ('3', '4', '5')", p("a", "3.0"), F},
		{"a in ('3', '4', '5')", p(), U},
		{"a not in ('3', '4', '5')", p("a", "8"), T},
		{"a not in ('3', '4', '5')", p("a", "3"), F},
		{"a not in ('3', '4', '5')", p(), U},
		{"a in ('')", p("a", ""), T},
		{"a in ('x', 'x')", p("a", "x"), T},
		{long, p("a", "v7"), T},
		{long, p("a", "v11"), F},
		{long, p(), U},
		{"a NOT" + long[1:], p("a", "v0"), F},
		{"a NOT" + long[1:], p("a", "v10"), T},
	})
}

func TestEvaluateIsNull(t *testing.T) {
	checkEval(t, []evalCase{
		{"a is null", p(), T},
		{"a is null", p("abc", "2"), T},
		{"a is null", p("a", ""), F},
		{"a is null", p("a", "2"), F},
		{"a is not null", p("a", "2"), T},
		{"a is not null", p("a", ""), T},
		{"a is not null", p(), F},
		{"a is null", nil, T},
		{"(a > 1) is null", p("a", "x"), T},
		{"(a > 1) is null", p("a", "2"), F},
		{"(a > 1) is not null", p(), F},
		{"-a is null", p("a", "x"), T},
		{"NULL is null", nil, T},
		{"NULL is not null", nil, F},
		{"'x' is null", nil, F},
		{"a is null or a = 'hello'", p(), T},
		{"a is not null and a = 'hello'", p(), F},
	})
}

func TestEvaluateStringPredicates(t *testing.T) {
	var cases []evalCase
	for _, tc := range []struct {
		op, hit, miss string
	}{
		{"CONTAINS", "x", "u"},
		{"STARTSWITH", "ax", "xb"},
		{"ENDSWITH", "xb", "ax"},
	} {
		axb := p("value", "axb")
		cases = append(cases,
			evalCase{fmt.Sprintf("value %s '%s'", tc.op, tc.hit), axb, T},
			evalCase{fmt.Sprintf("value %s '%s'", tc.op, tc.miss), axb, F},
			evalCase{fmt.Sprintf("value NOT %s '%s'", tc.op, tc.hit), axb, F},
			evalCase{fmt.Sprintf("value NOT %s '%s'", tc.op, tc.miss), axb, T},
			evalCase{fmt.Sprintf("value %s 'axb'", tc.op), axb, T},
			evalCase{fmt.Sprintf("value %s 'axbc'", tc.op), axb, F},
			evalCase{fmt.Sprintf("value %s 'AX'", tc.op), p("value", "ax"), F}, // case matters
			// an empty search string, and an absent operand, are FALSE for both forms
			evalCase{fmt.Sprintf("value %s ''", tc.op), axb, F},
			evalCase{fmt.Sprintf("value NOT %s ''", tc.op), axb, F},
			evalCase{fmt.Sprintf("value %s 'x'", tc.op), p(), F},
			evalCase{fmt.Sprintf("value NOT %s 'x'", tc.op), p(), F},
			evalCase{fmt.Sprintf("NOT (value %s 'x')", tc.op), p(), T},
			// string literals on the left
			evalCase{fmt.Sprintf("'axb' %s '%s'", tc.op, tc.hit), nil, T},
			evalCase{fmt.Sprintf("'axb' NOT %s '%s'", tc.op, tc.miss), nil, T},
			evalCase{fmt.Sprintf("' ' %s ' '", tc.op), nil, T},
			evalCase{fmt.Sprintf("'' %s ''", tc.op), nil, F},
			evalCase{fmt.Sprintf("value %s 'é'", tc.op), p("value", "é"), T},
		)
	}
	cases = append(cases, evalCase{"a CONTAINS '''x'''", p("a", "say 'x' now"), T})
	checkEval(t, cases)
}

func TestEvaluateAllocs(t *testing.T) {
	e := mustCompile(t, benchExpr)
	props := benchProps()
	if n := testing.AllocsPerRun(100, func() { e.Evaluate(props) }); n != 0 {
		t.Errorf("Evaluate allocates %v times per call", n)
	}
}

// benchExpr is a selector of the size consumers write, touching every kind of operator.
const benchExpr = "TAGS IN ('TagA', 'TagB') AND region = 'eu-west' AND price BETWEEN 10 AND 20.5 " +
	"AND (vip = TRUE OR level >= 3) AND traceId IS NOT NULL AND NOT (source STARTSWITH 'test')"

func benchProps() map[string]string {
	return p("TAGS", "TagB", "KEYS", "order-1001", "UNIQ_KEY", "7F0000010A2C18B4AAC2774F4D3C0000",
		"WAIT", "true", "region", "eu-west", "price", "12.75", "vip", "false", "level", "4",
		"traceId", "0af7651916cd43dd8448eb211c80319c", "source", "prod-app")
}

func BenchmarkEvaluate(b *testing.B) {
	props := benchProps()
	for _, bc := range []struct{ name, expr string }{
		{"string-eq", "region = 'eu-west'"},
		{"numeric", "price > 10"},
		{"in-set", "TAGS IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'TagB')"},
		{"mixed", benchExpr},
	} {
		e, err := Compile(bc.expr)
		if err != nil {
			b.Fatal(err)
		}
		if !e.Evaluate(props) {
			b.Fatalf("%s does not match the benchmark properties", bc.expr)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Evaluate(props)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchExpr)))
	for b.Loop() {
		if _, err := Compile(benchExpr); err != nil {
			b.Fatal(err)
		}
	}
}
