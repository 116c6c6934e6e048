package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so a crash leaves either the old or the new
// content: data goes to a temporary file in the same folder, which is fsynced; the previous
// content is kept as path.bak (a hard link, or a copy); the temporary file is renamed over
// path and the folder fsynced. Used for config/topics.json, consumerOffset.json, ...
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("store: create temporary file for %s: %w", path, err)
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmpName)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(fmt.Errorf("store: write %s: %w", tmpName, err))
	}
	if err := tmp.Sync(); err != nil {
		return fail(fmt.Errorf("store: sync %s: %w", tmpName, err))
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("store: close %s: %w", tmpName, err)
	}
	if err := keepBackup(path); err != nil {
		os.Remove(tmpName)
		return err
	}
	if err := os.Rename(tmpName, path); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("store: rename %s to %s: %w", tmpName, path, err)
	}
	return syncDir(dir)
}

// keepBackup makes path.bak hold the current content of path, when there is any.
func keepBackup(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && st.Size() == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: stat %s: %w", path, err)
	}
	bak := path + ".bak"
	tmpBak := bak + ".tmp"
	os.Remove(tmpBak)
	if err := os.Link(path, tmpBak); err != nil {
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return fmt.Errorf("store: read %s for its backup: %w", path, rerr)
		}
		if werr := writeFileSynced(tmpBak, data); werr != nil {
			return fmt.Errorf("store: write backup %s: %w", tmpBak, werr)
		}
	}
	if err := os.Rename(tmpBak, bak); err != nil {
		os.Remove(tmpBak)
		return fmt.Errorf("store: rename %s to %s: %w", tmpBak, bak, err)
	}
	return nil
}

// ReadConfigFile reads a file written by WriteFileAtomic, falling back to path.bak when the
// file is missing or empty. Neither present: an error wrapping os.ErrNotExist.
func ReadConfigFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err == nil && len(data) > 0 {
		return data, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: read %s: %w", path, err)
	}
	bak, berr := os.ReadFile(path + ".bak")
	if berr == nil && len(bak) > 0 {
		return bak, nil
	}
	if berr != nil && !errors.Is(berr, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: read %s.bak: %w", path, berr)
	}
	return nil, fmt.Errorf("store: %s and %s.bak are missing or empty: %w", path, path, os.ErrNotExist)
}
