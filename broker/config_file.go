package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/rocketraft/rocketraft/store"
)

// loadJSON reads a config/*.json file (or its .bak) into v. found is false when neither exists.
func loadJSON(path string, v any) (found bool, err error) {
	data, err := store.ReadConfigFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if len(data) == 0 {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("broker: %s is not valid JSON: %w", path, err)
	}
	return true, nil
}

// writeConfigFile replaces a config file atomically (temp file, fsync, rename).
func writeConfigFile(path string, data []byte) error {
	return store.WriteFileAtomic(path, data)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
