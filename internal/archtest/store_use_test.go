package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// replication lists the packages that reach the message store only through the CommitLog
// interface each owns (ha/log.go, raftlog/commitlog.go): their non-test code may name store's
// result types, constants and sentinel errors, but never *store.Store, and calls no store
// function (Open, a codec, ...). The broker hands them its store.
var replication = []string{"ha", "raftlog"}

// storeUses reports where the file f (parsed with its name) names store.Store or calls a
// function of package store.
func storeUses(fset *token.FileSet, f *ast.File) []string {
	local := ""
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/store" {
			local = "store"
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" || local == "_" {
		return nil
	}
	// pkgSel returns the name selected from package store (an identifier that resolves to no
	// object of the file: a local variable called store is not the package).
	pkgSel := func(e ast.Expr) (string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", false
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok || id.Name != local || id.Obj != nil {
			return "", false
		}
		return sel.Sel.Name, true
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if name, ok := pkgSel(n.Fun); ok {
				out = append(out, fmt.Sprintf("%s: calls store.%s", fset.Position(n.Pos()), name))
			}
		case *ast.SelectorExpr:
			if name, ok := pkgSel(n); ok && name == "Store" {
				out = append(out, fmt.Sprintf("%s: names store.Store", fset.Position(n.Pos())))
			}
		}
		return true
	})
	return out
}

func TestReplicationUsesStoreThroughItsInterface(t *testing.T) {
	args := []string{"list", "-f", "{{.Dir}} {{join .GoFiles \" \"}}"}
	for _, p := range replication {
		args = append(args, module+"/"+p)
	}
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	fset := token.NewFileSet()
	files := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, name := range f[1:] {
			file, err := parser.ParseFile(fset, filepath.Join(f[0], name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, v := range storeUses(fset, file) {
				t.Errorf("%s: %s reach the store only through the CommitLog interface each owns", v, strings.Join(replication, " and "))
			}
		}
	}
	if files < 2*len(replication) {
		t.Fatalf("go list gave %d files of %v: the rule would check nothing", files, replication)
	}
}

// The checker itself: it finds *store.Store and calls into store, under any import name, and
// lets types, constants, sentinels and a local variable called store pass.
func TestStoreUsesAreFound(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"a field of the concrete store", `import "` + module + `/store"
type N struct{ cl *store.Store }`, []string{"names store.Store"}},
		{"a renamed import", `import st "` + module + `/store"
func f() { _, _ = st.Open(st.Config{}, st.Options{}) }`, []string{"calls store.Open"}},
		{"a codec function", `import "` + module + `/store"
func f(b []byte) { store.CheckRecords(b, 0, true) }`, []string{"calls store.CheckRecords"}},
		{"types, constants and sentinels", `import ("errors"; "` + module + `/store")
var r = store.PutResult{Status: store.PutOK}
func f(err error, o []store.AssignedOffset) bool { return errors.Is(err, store.ErrOffsetOutOfRange) }`, nil},
		{"a local variable called store", `import "` + module + `/store"
type CL interface{ Flush() error }
var _ store.PutStatus
func f(store CL) error { return store.Flush() }`, nil},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package x\n"+tc.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := storeUses(fset, f)
		if len(got) != len(tc.want) || !slices.EqualFunc(got, tc.want, strings.HasSuffix) {
			t.Errorf("%s: storeUses = %q, want %q", tc.name, got, tc.want)
		}
	}
}
