package filter

import "testing"

// FuzzCompile checks that Compile never panics, that the canonical form of whatever compiles
// compiles to the same canonical form, and that both evaluate alike.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		"a=3 and b<>4 And c>5 AND d<=4",
		"a in ('3', '4', '5') or b not in ('x''y')",
		"(a between 2 and 10) AND (b not between -6 and 9.5e1)",
		"a is null or not (b is not null)",
		"NOT a = 1 AND b CONTAINS 'x' OR c NOT STARTSWITH '' AND c ENDSWITH 'z'",
		"-(-a) > +5L -- comment",
		"a /* x */ != .5",
		"(a > 1) = TRUE",
		"a = 1 = TRUE",
		"NULL IS NULL",
		"TAGS IS NOT NULL AND TAGS='''''tag'''''",
		"a.b.c = 'é'",
		"a > -9223372036854775808",
		"((((a))))",
		"a BETWEEN 1 AND 2 AND b",
	} {
		f.Add(seed)
	}
	// messages to evaluate what compiles against
	fuzzProps := []map[string]string{
		nil,
		{"a": "1", "b": "true", "c": "x"},
		{"a": "-2.5e3", "b": "FALSE", "c": "", "TAGS": "TagA"},
		{"a": "9223372036854775807", "b": "axb", "c": "3"},
	}
	f.Fuzz(func(t *testing.T, expr string) {
		e, err := Compile(expr)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("Compile(%q) error %T is not a *SyntaxError", expr, err)
			}
			return
		}
		canon := e.String()
		again, err := Compile(canon)
		if err != nil {
			t.Fatalf("Compile(%q) gave %q, which does not compile: %v", expr, canon, err)
		}
		if again.String() != canon {
			t.Fatalf("Compile(%q) gave %q, which compiles to %q", expr, canon, again)
		}
		for _, props := range fuzzProps {
			if x, y := e.root.test(props), again.root.test(props); x != y {
				t.Fatalf("%q and its canonical form %q differ on %v: %v, %v", expr, canon, props, x, y)
			}
		}
	})
}
