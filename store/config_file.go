package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rocketraft/rocketraft/internal/atomicfile"
)

// WriteFileAtomic replaces path with data so a crash leaves either the old or the new
// content, keeping the previous content as path.bak (a hard link, or a copy) for ReadConfigFile;
// the replacement itself is the one atomic writer of the tree, internal/atomicfile (a temporary
// file in the same folder, fsynced, renamed over path, the folder fsynced). A new file gets mode
// 0600. Used for config/topics.json, consumerOffset.json, ...
func WriteFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("store: create %s: %w", filepath.Dir(path), err)
	}
	if err := keepBackup(path); err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("store: replace %s: %w", path, err)
	}
	return nil
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

// ReadConfigJSON reads a file written by WriteFileAtomic (or its .bak, as ReadConfigFile) into v. found is
// false when neither exists or both are empty; a file that is not JSON is an error naming it.
func ReadConfigJSON(path string, v any) (found bool, err error) {
	data, err := ReadConfigFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("store: %s is not valid JSON: %w", path, err)
	}
	return true, nil
}
