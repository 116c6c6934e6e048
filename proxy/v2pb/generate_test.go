package v2pb_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedCodeIsCurrent regenerates the package with scripts/proto.sh into a temporary folder and
// compares it with the committed files, so a .proto edited without `make proto` fails make test.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc is not installed (make test-deps installs Debian's protobuf-compiler): the generated code is not checked")
	}
	out := t.TempDir()
	cmd := exec.Command("../../scripts/proto.sh", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/proto.sh: %v\n%s", err, b)
	}
	gen, err := filepath.Glob(filepath.Join(out, "proxy", "v2pb", "*.go"))
	if err != nil || len(gen) == 0 {
		t.Fatalf("scripts/proto.sh generated nothing in %s (%v)", out, err)
	}
	committed, _ := filepath.Glob("*.pb.go")
	if len(committed) != len(gen) {
		t.Errorf("%d generated files, %d committed (%v): run make proto", len(gen), len(committed), committed)
	}
	for _, g := range gen {
		want, _ := os.ReadFile(g)
		got, err := os.ReadFile(filepath.Base(g))
		if err != nil {
			t.Errorf("%s is not committed: run make proto", filepath.Base(g))
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what proto/ generates: run make proto", filepath.Base(g))
		}
	}
}
