package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesKeepsModeLeavesNoTemp(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	path := filepath.Join(dir, "f.yml")
	if err := Write(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	st, _ := os.Stat(path)
	if err != nil || string(data) != "two" || st.Mode().Perm() != 0o640 {
		t.Fatalf("content %q mode %v err %v", data, st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if err := Write(filepath.Join(path, "under-a-file"), []byte("x"), 0o600); err == nil {
		t.Fatal("a write under a regular file succeeded")
	}
}
