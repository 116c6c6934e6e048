package admin

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// usageError is a mistake on the command line: exit status 2, and the message names the flag.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// flagSpec is one option as RocketMQ's tools spell it: a one-letter name, a long name, and whether it
// takes a value. Both spellings are accepted with one or two dashes (-t, --topic, -topic).
type flagSpec struct {
	short, long string
	usage       string
	hasArg      bool
	required    bool
	def         string // shown in help; "" for none
}

// flags wraps a flag.FlagSet with RocketMQ's option model: short and long names for one value, options
// that take "true"/"false" as an argument (-o true), required options, and a record of what was given.
type flags struct {
	fs    *flag.FlagSet
	specs []*flagSpec
	byAny map[string]*flagSpec // short or long name -> spec
	given map[string]bool      // long names given on the command line
}

func newFlags(name string) *flags {
	fs := flag.NewFlagSet("mqadmin "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by Run; help is printed by usage
	fs.Usage = func() {}
	return &flags{fs: fs, byAny: map[string]*flagSpec{}, given: map[string]bool{}}
}

func (f *flags) add(spec *flagSpec, v flag.Value) {
	f.specs = append(f.specs, spec)
	for _, n := range []string{spec.short, spec.long} {
		if n != "" {
			f.fs.Var(v, n, spec.usage)
			f.byAny[n] = spec
		}
	}
}

// String registers an option with a string value.
func (f *flags) String(p *string, short, long, usage string, required bool) {
	f.add(&flagSpec{short: short, long: long, usage: usage, hasArg: true, required: required, def: *p},
		(*stringValue)(p))
}

// Int registers an option with an int value.
func (f *flags) Int(p *int, short, long, usage string, required bool) {
	f.add(&flagSpec{short: short, long: long, usage: usage, hasArg: true, required: required, def: strconv.Itoa(*p)},
		(*intValue)(p))
}

// Int32 registers an option with an int32 value (a field RocketMQ declares int).
func (f *flags) Int32(p *int32, short, long, usage string, required bool) {
	f.add(&flagSpec{short: short, long: long, usage: usage, hasArg: true, required: required,
		def: strconv.FormatInt(int64(*p), 10)}, (*int32Value)(p))
}

// Int64 registers an option with an int64 value.
func (f *flags) Int64(p *int64, short, long, usage string, required bool) {
	f.add(&flagSpec{short: short, long: long, usage: usage, hasArg: true, required: required,
		def: strconv.FormatInt(*p, 10)}, (*int64Value)(p))
}

// Duration registers an option with a duration value (500ms, 5s).
func (f *flags) Duration(p *time.Duration, short, long, usage string) {
	f.add(&flagSpec{short: short, long: long, usage: usage, hasArg: true, def: p.String()}, (*durationValue)(p))
}

// BoolArg registers a boolean option that takes its value as an argument, as RocketMQ's do: -o true.
func (f *flags) BoolArg(p *bool, short, long, usage string) {
	f.add(&flagSpec{short: short, long: long, usage: usage + " (true|false)", hasArg: true,
		def: strconv.FormatBool(*p)}, (*boolArgValue)(p))
}

// Switch registers an option without a value: present means true (-l, -m).
func (f *flags) Switch(p *bool, short, long, usage string) {
	f.add(&flagSpec{short: short, long: long, usage: usage}, (*switchValue)(p))
}

// parse parses argv, checks required options and refuses left-over arguments.
func (f *flags) parse(argv []string) error {
	if err := f.fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	if f.fs.NArg() > 0 {
		return usagef("unexpected argument %q: options come as -t value (see mqadmin help %s)", f.fs.Arg(0),
			strings.TrimPrefix(f.fs.Name(), "mqadmin "))
	}
	f.fs.Visit(func(fl *flag.Flag) {
		if s := f.byAny[fl.Name]; s != nil {
			f.given[s.long] = true
		}
	})
	if f.given["help"] {
		return nil // help needs nothing else
	}
	for _, s := range f.specs {
		if s.required && !f.given[s.long] {
			return usagef("option %s is required", s.names())
		}
	}
	return nil
}

// has reports whether the option with this long name was given.
func (f *flags) has(long string) bool { return f.given[long] }

// oneOf requires exactly one of the named options (long names).
func (f *flags) oneOf(longs ...string) error {
	var got []string
	for _, l := range longs {
		if f.given[l] {
			got = append(got, l)
		}
	}
	if len(got) == 1 {
		return nil
	}
	names := make([]string, len(longs))
	for i, l := range longs {
		names[i] = f.spec(l).names()
	}
	if len(got) == 0 {
		return usagef("one of %s is required", strings.Join(names, " or "))
	}
	return usagef("give only one of %s", strings.Join(names, " or "))
}

// needs requires option long to come with option other.
func (f *flags) needs(long, other string) error {
	if f.given[long] && !f.given[other] {
		return usagef("option %s needs %s", f.spec(long).names(), f.spec(other).names())
	}
	return nil
}

func (f *flags) spec(long string) *flagSpec { return f.byAny[long] }

func (s *flagSpec) names() string {
	if s.short == "" {
		return "--" + s.long
	}
	return "-" + s.short + " (--" + s.long + ")"
}

// writeHelp lists the options, sorted by short name, as "-t,--topic <arg>  text".
func writeHelp(w io.Writer, specs []*flagSpec) {
	sorted := append([]*flagSpec(nil), specs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sortName(sorted[i]) < sortName(sorted[j]) })
	rows := make([][2]string, len(sorted))
	width := 0
	for i, s := range sorted {
		n := "    --" + s.long
		if s.short != "" {
			n = " -" + s.short + ",--" + s.long
		}
		if s.hasArg {
			n += " <arg>"
		}
		text := s.usage
		if s.required {
			text += " (required)"
		} else if s.hasArg && s.def != "" && s.def != "0" && s.def != "false" {
			text += " (default " + s.def + ")"
		}
		rows[i] = [2]string{n, text}
		width = max(width, len(n))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-*s  %s\n", width, r[0], r[1])
	}
}

func sortName(s *flagSpec) string {
	if s.short != "" {
		return s.short
	}
	return s.long
}

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(strings.TrimSpace(s)); return nil }
func (v *stringValue) String() string     { return string(*v) }

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type int32Value int32

func (v *int32Value) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is outside %d..%d", s, math.MinInt32, math.MaxInt32)
	}
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v = int32Value(n)
	return nil
}
func (v *int32Value) String() string { return strconv.FormatInt(int64(*v), 10) }

type int64Value int64

func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v = int64Value(n)
	return nil
}
func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d <= 0 {
		return fmt.Errorf("%q is not a positive duration (e.g. 500ms, 5s)", s)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }

type boolArgValue bool

func (v *boolArgValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not true or false", s)
	}
	*v = boolArgValue(b)
	return nil
}
func (v *boolArgValue) String() string { return strconv.FormatBool(bool(*v)) }

type switchValue bool

func (v *switchValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q is not true or false", s)
	}
	*v = switchValue(b)
	return nil
}
func (v *switchValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *switchValue) IsBoolFlag() bool { return true }
