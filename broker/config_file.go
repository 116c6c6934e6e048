package broker

import (
	"sort"

	"github.com/rocketraft/rocketraft/store"
)

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
