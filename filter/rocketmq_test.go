package filter

import (
	"strings"
	"testing"
)

// The cases of RocketMQ's own filter tests (filter/src/test: ParserTest and ExpressionTest),
// as data. ExpressionTest also feeds typed values (Integer, Double, Boolean, Object) to the
// evaluator; on the broker every property is a string, so those appear here as their string
// form, and the cases that only make sense for a non-string value are left out.

const (
	rmqAnd     = "a=3 and b<>4 And c>5 AND d<=4"
	rmqAndWide = "a=3  and    b<>4 And c>5 AND d<=4"
	rmqOr      = "a=3 or b<>4 Or c>5 OR d<=4"
	rmqIn      = "a in ('3', '4', '5')"
	rmqNotIn   = "a not in ('3', '4', '5')"
	rmqBetween = "a between 2 and 10"
	rmqNotBtw  = "a not between 2 and 10"
	rmqIsNull  = "a is null"
	rmqNotNull = "a is not null"
	rmqEqual   = "a is not null and a='hello'"
	rmqBoolean = "a=TRUE OR b=FALSE"
	rmqNullOr  = "a is null OR a='hello'"
	rmqQuotes  = "TAGS is not null and TAGS='''''tag'''''"
)

func TestRocketMQParserValid(t *testing.T) {
	for _, expr := range []string{
		rmqAnd, rmqOr, rmqIn,
		"(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))",
		"(a between 2 and 10) AND (b not between 6 and 9)",
		rmqIsNull, rmqNotNull,
		"a <= now", // now is a property: RocketMQ's grammar has no NOW token
		"a=3 and b contains 'xxx' and c not contains 'xxx'",
	} {
		mustCompile(t, expr)
	}
}

func TestRocketMQParserInvalid(t *testing.T) {
	var huge strings.Builder
	huge.WriteString("a > 1")
	for range 2048 {
		huge.WriteString("111111111111111111111111111111111111111111111111111")
	}
	huge.WriteString(".")
	for range 2048 {
		huge.WriteString("111111111111111111111111111111111111111111111111111")
	}
	for _, expr := range []string{
		"a and between 2 and 10",
		"a > 100000000000000000000000",            // testParse_decimalOverFlow
		huge.String(),                             // testParse_floatOverFlow (here over MaxLength)
		"a > 1" + strings.Repeat("1", 400) + ".1", // and within it
		" a between 10 and 0",                     // testParse_illegalBetween
		"value contains x",                        // testContains_has_not_string_1
		"value not contains x",
		"value contains 123", // testContains_has_not_string_2
		"value not contains 123",
	} {
		if _, err := Compile(expr); err == nil {
			t.Errorf("Compile(%.60q) succeeded", expr)
		}
	}
}

func TestRocketMQParserEquals(t *testing.T) {
	and, wide, or := mustCompile(t, rmqAnd), mustCompile(t, rmqAndWide), mustCompile(t, rmqOr)
	if and.String() != wide.String() {
		t.Errorf("%q and %q differ", and, wide)
	}
	if and.String() == or.String() {
		t.Errorf("%q and %q are the same", and, or)
	}
}

func TestRocketMQExpression(t *testing.T) {
	checkEval(t, []evalCase{
		// testContains_StartsWith_EndsWith_* and the NOT forms
		{"value contains 'x'", p("value", "axb"), T},
		{"value startswith 'ax'", p("value", "axb"), T},
		{"value endswith 'xb'", p("value", "axb"), T},
		{"value not contains 'x'", p("value", "axb"), F},
		{"value not startswith 'ax'", p("value", "axb"), F},
		{"value not endswith 'xb'", p("value", "axb"), F},
		{"value contains 'x'", p("value", "abb"), F},
		{"value startswith 'x'", p("value", "abb"), F},
		{"value endswith 'x'", p("value", "abb"), F},
		{"value not contains 'x'", p("value", "abb"), T},
		{"value not startswith 'x'", p("value", "abb"), T},
		{"value not endswith 'x'", p("value", "abb"), T},
		{"value contains ''", p("value", "axb"), F},
		{"value startswith ''", p("value", "axb"), F},
		{"value endswith ''", p("value", "axb"), F},
		{"value not contains ''", p("value", "axb"), F},
		{"value not startswith ''", p("value", "axb"), F},
		{"value not endswith ''", p("value", "axb"), F},
		{"value contains 'x'", p(), F},
		{"value startswith 'x'", p(), F},
		{"value endswith 'x'", p(), F},
		{"value not contains 'x'", p(), F},
		{"value not startswith 'x'", p(), F},
		{"value not endswith 'x'", p(), F},
		{"value contains 'x'", p("value", "1.23"), F},
		{"value contains 'x'", p("value", "true"), F},
		{"'axb' contains 'x'", p("whatever", "whatever"), T},
		{"'axb' startswith 'ax'", nil, T},
		{"'axb' endswith 'xb'", nil, T},
		{"'axb' not contains 'x'", nil, F},
		{"'axb' not startswith 'ax'", nil, F},
		{"'axb' not endswith 'xb'", nil, F},
		{"'axb' contains 'u'", nil, F},
		{"'axb' startswith 'u'", nil, F},
		{"'axb' endswith 'u'", nil, F},
		{"'axb' not contains 'u'", nil, T},
		{"'axb' not startswith 'u'", nil, T},
		{"'axb' not endswith 'u'", nil, T},
		{"'axb' contains ''", nil, F},
		{"'axb' not contains ''", nil, F},
		{"' ' contains ' '", nil, T},
		{"' ' startswith ' '", nil, T},
		{"' ' endswith ' '", nil, T},
		{"' ' not contains ' '", nil, F},
		{"' ' not startswith ' '", nil, F},
		{"' ' not endswith ' '", nil, F},
		{"'' contains ''", nil, F},
		{"'' startswith ''", nil, F},
		{"'' endswith ''", nil, F},
		{"'' not contains ''", nil, F},
		// test*AllInOne
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'", p("a", "3", "b", "3", "c", "axbdc"), T},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not startswith 'axbc'", p("a", "3", "b", "3", "c", "axbdc"), T},
		{"a not in ('4', '4', '5') and b between 3 and 10 and c not endswith 'axbc'", p("a", "3", "b", "3", "c", "axbdc"), T},
		// testEvaluate_stringHasString
		{rmqQuotes, p("TAGS", "''tag''"), T},
		// testEvaluate_stringCompare: RocketMQ throws, which does not match
		{"a between up and low", p("a", "3.14"), U},
		{"a between up and low", p("a", "3.14", "up", "up", "low", "low"), U},
		{"key is not null and key between 0 and 100", p("key", "con"), U},
		{"a between 0 and 100", p("a", "abc"), U},
		{"a=b", p("a", "3.14", "b", "3.14"), T},
		{"a<>b", p("a", "3.14", "b", "3.14"), F},
		{"a<>b", p("a", "3.14", "b", "3.141"), T},
		// testEvaluate_exponent, testEvaluate_floatNumber, testEvaluate_twoVariable*
		{"a > 3.1E10", p("a", "3.1415E10"), T},
		{"a > 3.14", p("a", "3.1415"), T},
		{"a > b", p("a", "10", "b", "20"), F},
		{"a > b", p("a", "20", "b", "10"), T},
		// testEvaluate_nullOr, testEvaluate_boolean, testEvaluate_equal
		{rmqNullOr, p(), T},
		{rmqNullOr, p("a", "hello"), T},
		{rmqNullOr, p("a", "abc"), F},
		{rmqBoolean, p("a", "true", "b", "false"), T},
		{rmqBoolean, p("a", "false", "b", "true"), F},
		{rmqEqual, p("a", "hello"), T},
		{rmqEqual, p(), F},
		// testEvaluate_andTrue, andFalse, orTrue, orFalse
		{rmqAnd, p("a", "3", "b", "5", "c", "6", "d", "1"), T},
		{rmqAnd, p("a", "4", "b", "5", "c", "6", "d", "1"), F},
		{rmqOr, p("a", "3"), T},
		{rmqOr, p("a", "4", "b", "5"), T},
		{rmqOr, p("a", "4", "b", "4", "c", "6"), T},
		{rmqOr, p("a", "4", "b", "4", "c", "3", "d", "2"), T},
		{rmqOr, p("a", "4", "b", "4", "c", "3", "d", "10"), F},
		// testEvaluate_inTrue, inFalse, notInTrue, notInFalse
		{rmqIn, p("a", "3"), T},
		{rmqIn, p("a", "4"), T},
		{rmqIn, p("a", "5"), T},
		{rmqIn, p("a", "8"), F},
		{rmqNotIn, p("a", "8"), T},
		{rmqNotIn, p("a", "3"), F},
		{rmqNotIn, p("a", "4"), F},
		{rmqNotIn, p("a", "5"), F},
		// testEvaluate_betweenTrue, betweenFalse, notBetweenTrue, notBetweenFalse
		{rmqBetween, p("a", "2"), T},
		{rmqBetween, p("a", "10"), T},
		{rmqBetween, p("a", "3"), T},
		{rmqBetween, p("a", "1"), F},
		{rmqBetween, p("a", "11"), F},
		{rmqNotBtw, p("a", "1"), T},
		{rmqNotBtw, p("a", "11"), T},
		{rmqNotBtw, p("a", "2"), F},
		{rmqNotBtw, p("a", "10"), F},
		{rmqNotBtw, p("a", "3"), F},
		// testEvaluate_isNullTrue, isNullFalse, isNotNullTrue, isNotNullFalse
		{rmqIsNull, p("abc", "2"), T},
		{rmqIsNull, p("a", "2"), F},
		{rmqNotNull, p("a", "2"), T},
		{rmqNotNull, p("abc", "2"), F},
	})
}
