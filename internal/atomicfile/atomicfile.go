// Package atomicfile replaces small files (config, ACL rules, KV settings) so that a crash leaves the old
// content or the new one, never a torn file: write a temporary file in the same folder, fsync it, rename it
// over the file, fsync the folder.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data. The folder is created when missing. The file keeps its mode when it exists,
// else it gets mode. The temporary file is named ".<name>.tmp*" in the same folder, so a watcher of path
// alone sees only the rename.
func Write(path string, data []byte, mode os.FileMode) error {
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
