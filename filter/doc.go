// Package filter implements RocketMQ's SQL92 message filter: the selector language a consumer
// subscribes with (expression type "SQL92") and the broker evaluates against each message's
// properties (enablePropertyFilter). The semantic reference is RocketMQ's own filter module
// (SelectorParser.jj and the expression classes, taken from ActiveMQ's JMS selectors); the
// lexer and recursive-descent parser here are written by hand.
//
// # Use
//
// A subscription is compiled once:
//
//	expr, err := filter.Compile("region = 'eu' AND price BETWEEN 10 AND 20")
//
// err is a *SyntaxError, e.g. "filter: at column 12: expected a value after '>'". The
// compiled Expression is immutable and safe for concurrent use; Evaluate runs per message
// and does not allocate:
//
//	expr.Evaluate(map[string]string{"region": "eu", "price": "12.5"}) // true
//
// NewFilter wraps an Expression as a store.MessageFilter for Store.GetMessage.
//
// # Grammar
//
// In EBNF (ISO 14977 style: {} repeats, [] is optional). Reserved words are case-insensitive;
// white space and comments (-- to the end of the line, /* ... */) separate tokens.
//
//	Selector   = OrExpr .
//	OrExpr     = AndExpr { "OR" AndExpr } .
//	AndExpr    = NotExpr { "AND" NotExpr } .
//	NotExpr    = "NOT" NotExpr | Equality .
//	Equality   = Relational { ( "=" | "<>" | "!=" ) Relational
//	                        | "IS" [ "NOT" ] "NULL" } .
//	Relational = Unary { ( "<" | "<=" | ">" | ">=" ) Unary
//	                   | [ "NOT" ] "BETWEEN" Unary "AND" Unary
//	                   | [ "NOT" ] "IN" "(" String { "," String } ")"
//	                   | [ "NOT" ] ( "CONTAINS" | "STARTSWITH" | "ENDSWITH" ) String } .
//	Unary      = ( "+" | "-" ) Unary | Primary .
//	Primary    = Literal | Property | "(" OrExpr ")" .
//	Literal    = String | Integer | Decimal | "TRUE" | "FALSE" | "NULL" .
//
//	Property   = Start { Start | Digit | "." ( Start | Digit ) } .  (not a reserved word)
//	Start      = "A" … "Z" | "a" … "z" | "_" | "$" .
//	Integer    = Digits [ "L" | "l" ] .                        (a long)
//	Decimal    = Digits "." [ Digits ] [ Exponent ]            (a double)
//	           | "." Digits [ Exponent ] | Digits Exponent .
//	Exponent   = ( "E" | "e" ) [ "+" | "-" ] Digits .
//	Digits     = Digit { Digit } .
//	String     = "'" { any character but "'" | "''" } "'" .
//
// Reserved words: AND BETWEEN CONTAINS ENDSWITH FALSE IN IS NOT NULL OR STARTSWITH TRUE.
//
// Precedence, tightest first: sign; comparisons, BETWEEN, IN and the string predicates;
// = <> and IS NULL; NOT; AND; OR. So "NOT a = 1 AND b = 2 OR c = 3" is
// "((NOT (a = 1)) AND b = 2) OR c = 3".
//
// Compile checks operand types as RocketMQ does: the whole selector, and each operand of AND,
// OR and NOT, must be a condition (a comparison, TRUE, FALSE, NULL, or a property, which is
// then read as a boolean); <, <=, >, >= and BETWEEN take numbers and properties only; = and <>
// refuse NULL (use IS NULL) and two operands of different known types; IN needs a property
// on its left and string literals in its list; CONTAINS, STARTSWITH and ENDSWITH take a
// string literal on their right; BETWEEN refuses a constant range whose lower bound is
// greater than its upper. Expressions longer than MaxLength bytes, or nested deeper than
// MaxDepth, are refused, so a hostile subscription cannot exhaust memory or stack.
//
// # Semantics
//
// Property values are strings, as they are on the wire; a property absent from the message
// is NULL. Conditions have three values, TRUE, FALSE and UNKNOWN, combined as in SQL and JMS
// (Kleene logic): FALSE AND UNKNOWN is FALSE, TRUE OR UNKNOWN is TRUE, NOT UNKNOWN is
// UNKNOWN. A message matches only when the selector is TRUE.
//
//   - A comparison with NULL, and so with an absent property, is UNKNOWN.
//   - = and <> between strings compare the strings. Against a number, the property is read
//     as a number (an optionally signed long or decimal, e.g. "42", "-1.5", "2e3"); a value
//     that is not one makes the comparison UNKNOWN. Against TRUE or FALSE, the property is
//     true when it is "true" in any case and false otherwise (Java's Boolean.valueOf).
//   - <, <=, >, >= and BETWEEN read both sides as numbers, UNKNOWN if either is not one. Two
//     longs compare exactly, otherwise as doubles. a BETWEEN x AND y is a >= x AND a <= y;
//     a NOT BETWEEN x AND y is a < x OR a > y.
//   - a IN (...) is UNKNOWN when a is absent, else whether a equals one of the strings;
//     NOT IN is its negation.
//   - IS NULL is TRUE for an absent property (an empty value is not NULL) and for an UNKNOWN
//     condition; IS NOT NULL is its negation. Neither is ever UNKNOWN.
//   - CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are FALSE, not UNKNOWN, when the
//     operand is absent or the search string is empty, exactly as in RocketMQ.
//   - A property used as a condition ("a AND b") is TRUE when its value is "true" in any
//     case, FALSE for any other value, UNKNOWN when absent.
//   - A sign applies to numbers; -a reads property a as a number (UNKNOWN if it is not one).
//
// # Differences from RocketMQ
//
// The language is RocketMQ's with a few extensions. Where they differ:
//
//   - NOT binds looser than comparisons, as in SQL: "NOT a = 'x'" is NOT (a = 'x').
//     RocketMQ's grammar binds NOT tightest, so there the same text is (NOT a) = 'x', a
//     boolean compared with a string, which it cannot evaluate (it throws and the message
//     does not match); "NOT a > 1" it refuses to compile; and "NOT a IS NULL" is
//     (NOT a) IS NULL, TRUE when a is absent, where here it is TRUE when a is present. NOT
//     before a parenthesised condition, the usual way to write it, means the same in both,
//     and String() always writes it that way.
//   - Extensions: "!=" for "<>"; dots in property names (a.b); the L suffix on any integer,
//     and leading zeros (007); a -- comment may end the expression without a newline; 0.0
//     is accepted (RocketMQ refuses a decimal literal smaller than Double.MIN_VALUE, zero
//     included).
//   - A property that is not a number where one is needed makes that comparison UNKNOWN;
//     RocketMQ throws, which fails the whole selector even where OR would have matched.
//     Against a long literal RocketMQ also parses the property as an int or long only, so
//     "price > 10" fails for price "10.5"; here it is read as a decimal and matches.
//   - A property value read as a number must be plain decimal text as described above;
//     Java's Double.valueOf, which RocketMQ uses when both sides are properties, also
//     takes surrounding white space, hexadecimal, "NaN" and "Infinity".
//   - NULL compares UNKNOWN on either side; RocketMQ's 'x' = a gives FALSE, not UNKNOWN,
//     when a is absent (so 'x' <> a is TRUE), while a = 'x' gives UNKNOWN.
//   - A property used as a condition is TRUE for "true"; in RocketMQ it is always FALSE
//     when present, since property values are strings. -a reads a as a number; in RocketMQ
//     it is always NULL.
//   - Compile refuses some type errors RocketMQ lets through to evaluation: a sign
//     before a string, boolean or condition; = and <> between operands of different
//     known types (1 = 'a', 1 = TRUE; RocketMQ already refuses TRUE = 1); CONTAINS
//     and its kin on a number or condition.
//   - Errors: RocketMQ wraps a JavaCC message; here the message names the column and what
//     was expected.
//   - The bloom-filter pre-check on the ConsumeQueue (RocketMQ's optional
//     enableCalcFilterBitMap) is not implemented: MatchByConsumeQueue is always true.
package filter
