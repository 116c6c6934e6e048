package conf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/magiconair/properties"
)

// ParseUpdate reads the body of an UPDATE_BROKER_CONFIG or UPDATE_NAMESRV_CONFIG request (a properties
// text, "key=value" lines, no ${} expansion) and returns its keys as --key=value arguments for ApplyArgs,
// sorted by key. server ("broker", "name server") names the process in the refusal. A body without keys is an
// error; so is a key that target (a pointer to the server's config struct) does not have ("unknown config
// key"), and one that reloadable does not hold (read-only while the server runs); both name the key, the
// latter listing the reloadable ones.
func ParseUpdate(body []byte, reloadable map[string]string, server string, target any) ([]string, error) {
	fields, err := collectFields([]any{target})
	if err != nil {
		return nil, err
	}
	loader := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	props, err := loader.LoadBytes(body)
	if err != nil {
		return nil, fmt.Errorf("the body is not a properties text: %w", err)
	}
	keys := props.Keys()
	if len(keys) == 0 {
		return nil, fmt.Errorf("no config key in the body")
	}
	sort.Strings(keys)
	argv := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, known := fields[strings.ToLower(k)]; !known {
			return nil, fmt.Errorf("unknown config key %s: the %s has no such key", k, server)
		}
		if _, ok := reloadable[k]; !ok {
			names := make([]string, 0, len(reloadable))
			for n := range reloadable {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("config key %s cannot change while the %s runs (reloadable: %s); set it in the config file and restart",
				k, server, strings.Join(names, ", "))
		}
		v, _ := props.Get(k)
		argv = append(argv, "--"+k+"="+v)
	}
	return argv, nil
}

// ApplyArgs sets --key=value arguments (ParseUpdate's) on target, a pointer to a config struct; a key no
// field carries is an error naming it.
func ApplyArgs(target any, argv []string) error {
	args, err := ParseArgs(argv)
	if err != nil {
		return err
	}
	res, err := Load(args, target)
	if err != nil {
		return err
	}
	if len(res.UnknownKeys) > 0 {
		return fmt.Errorf("unknown config key %s", res.UnknownKeys[0])
	}
	return nil
}
