package conf

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Args is a parsed command line: `-c FILE`, `-n ADDR`, `-p`, `-h` and `--key=value` overrides.
type Args struct {
	ConfigFile  string            // -c FILE
	NamesrvAddr string            // -n ADDR (name servers, ';'-separated)
	Print       bool              // -p: print the effective config and exit
	Help        bool              // -h / --help
	Overrides   map[string]string // --key=value (or --key value), in the order they came
	order       []string
}

// ParseArgs reads the command line (without the program name).
func ParseArgs(argv []string) (Args, error) {
	a := Args{Overrides: map[string]string{}}
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		next := func() (string, error) {
			if i+1 >= len(argv) {
				return "", fmt.Errorf("flag %s needs a value", arg)
			}
			i++
			return argv[i], nil
		}
		var err error
		switch {
		case arg == "-c" || arg == "--configFile":
			a.ConfigFile, err = next()
		case arg == "-n" || arg == "--namesrvAddr":
			a.NamesrvAddr, err = next()
		case arg == "-p" || arg == "--printConfigItem":
			a.Print = true
		case arg == "-h" || arg == "--help":
			a.Help = true
		case strings.HasPrefix(arg, "--") && len(arg) > 2:
			kv := arg[2:]
			key, val, ok := strings.Cut(kv, "=")
			if !ok {
				if val, err = next(); err != nil {
					break
				}
			}
			if key == "" {
				return a, fmt.Errorf("flag %q has no key", arg)
			}
			if _, seen := a.Overrides[key]; !seen {
				a.order = append(a.order, key)
			}
			a.Overrides[key] = val
		default:
			return a, fmt.Errorf("unknown argument %q (use -c FILE, -n ADDR, -p, or --key=value)", arg)
		}
		if err != nil {
			return a, err
		}
	}
	return a, nil
}

// Result tells what loading found besides the values themselves.
type Result struct {
	UnknownKeys []string // keys in the file or on the command line that no target knows (warn about them)
}

// Load fills targets (pointers to structs already holding their defaults) from the config file named by
// args.ConfigFile, if any, then from args.Overrides. The file type follows its extension: .properties
// (also .conf and no extension), .yaml/.yml, .json, .toml.
func Load(args Args, targets ...any) (Result, error) {
	var res Result
	fields, err := collectFields(targets)
	if err != nil {
		return res, err
	}
	values := map[string]string{}  // lower-case key -> raw value
	spelled := map[string]string{} // lower-case key -> the key as the user wrote it
	if args.ConfigFile != "" {
		v := newViper()
		v.SetConfigFile(args.ConfigFile)
		switch strings.ToLower(filepath.Ext(args.ConfigFile)) {
		case ".yaml", ".yml":
			v.SetConfigType("yaml")
		case ".json":
			v.SetConfigType("json")
		case ".toml":
			v.SetConfigType("toml")
		default:
			v.SetConfigType("properties")
		}
		if err := v.ReadInConfig(); err != nil {
			return res, fmt.Errorf("config file %s: %w", args.ConfigFile, err)
		}
		asWritten := fileKeys(args.ConfigFile)
		for _, k := range v.AllKeys() {
			lk := strings.ToLower(k)
			values[lk] = rawString(v.Get(k))
			spelled[lk] = k
			if w, ok := asWritten[lk]; ok {
				spelled[lk] = w
			}
		}
	}
	for _, k := range args.order {
		values[strings.ToLower(k)] = args.Overrides[k]
		spelled[strings.ToLower(k)] = k
	}
	if args.NamesrvAddr != "" {
		values["namesrvaddr"] = args.NamesrvAddr
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		fs, ok := fields[k]
		if !ok {
			name := spelled[k]
			if name == "" {
				name = k
			}
			res.UnknownKeys = append(res.UnknownKeys, name)
			continue
		}
		for _, f := range fs {
			if err := setField(f.value, values[k]); err != nil {
				errs = append(errs, fmt.Errorf("config key %s: %w", f.name, err))
			}
		}
	}
	return res, errors.Join(errs...)
}

// Print writes every key of the targets with its effective value, sorted, in .properties form.
func Print(w io.Writer, targets ...any) error {
	fields, err := collectFields(targets)
	if err != nil {
		return err
	}
	type kv struct{ k, v string }
	var all []kv
	for _, fs := range fields {
		for _, f := range fs {
			all = append(all, kv{f.name, formatValue(f.value)})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].k < all[j].k })
	for _, e := range all {
		if _, err := fmt.Fprintf(w, "%s=%s\n", e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

type field struct {
	name  string // as tagged (RocketMQ spelling)
	value reflect.Value
}

// collectFields maps lower-case key -> the settable fields carrying it (several targets may share a key,
// e.g. listenPort in a broker and its embedded parts).
func collectFields(targets []any) (map[string][]field, error) {
	out := map[string][]field{}
	for _, t := range targets {
		rv := reflect.ValueOf(t)
		if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("conf: target %T is not a pointer to a struct", t)
		}
		walk(rv.Elem(), out)
	}
	return out, nil
}

func walk(v reflect.Value, out map[string][]field) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("mapstructure")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if strings.Contains(opts, "squash") && fv.Kind() == reflect.Struct {
			walk(fv, out)
			continue
		}
		if name == "" {
			continue
		}
		lk := strings.ToLower(name)
		out[lk] = append(out[lk], field{name: name, value: fv})
	}
}

var durationType = reflect.TypeOf(time.Duration(0))

func setField(v reflect.Value, raw string) error {
	s := strings.TrimSpace(raw)
	if v.Type() == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 500ms, 10s)", raw)
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not a boolean (true or false)", raw)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not an integer that fits in %d bits", raw, v.Type().Bits())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a non-negative integer that fits in %d bits", raw, v.Type().Bits())
		}
		v.SetUint(n)
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("%q is not a number", raw)
		}
		v.SetFloat(f)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported list type %s", v.Type())
		}
		var parts []string
		for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("unsupported field type %s", v.Type())
	}
	return nil
}

func formatValue(v reflect.Value) string {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String()
	}
	if v.Kind() == reflect.Slice {
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(parts, ";")
	}
	return fmt.Sprint(v.Interface())
}

// rawString turns what viper parsed (strings from .properties; typed values from YAML) back into text.
func rawString(x any) string {
	switch t := x.(type) {
	case nil:
		return ""
	case string:
		return t
	case []any:
		parts := make([]string, len(t))
		for i, p := range t {
			parts[i] = rawString(p)
		}
		return strings.Join(parts, ";")
	default:
		return fmt.Sprint(t)
	}
}
