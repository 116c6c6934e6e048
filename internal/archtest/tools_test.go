package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// toolDirs are the folders (from the module root) of the client tools: they reach name servers and brokers
// only through package client, never with a remoting.Client of their own. bench/cmd/brokerprobe is in the
// bench module but uses this one's client.
var toolDirs = append(append([]string(nil), clientTools...), "bench/cmd/brokerprobe")

// dialers are the remoting names that make a client of one's own.
var dialers = map[string]bool{"NewClient": true, "ClientConfig": true}

// ownDialers lists "file: remoting.X" for each use of a dialer in the non-test Go files of dir.
func ownDialers(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if path != module+"/remoting" {
				continue
			}
			name := "remoting"
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = true
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] && dialers[sel.Sel.Name] {
					out = append(out, fset.Position(sel.Pos()).String()+": remoting."+sel.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

// TestToolsUseTheClient: mqadmin, mqbench, mqchaos, the console and brokerprobe make no remoting.Client of
// their own (tests may: a fake consumer answering the broker's requests is not a client tool).
func TestToolsUseTheClient(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, d := range toolDirs {
		dir := filepath.Join(root, filepath.FromSlash(d))
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("tool folder %s: %v", d, err)
		}
		for _, use := range ownDialers(t, dir) {
			t.Errorf("%s: a client tool dials through package client only", use)
		}
	}
}

// The checker itself finds a dialer, also under another import name.
func TestOwnDialersAreFound(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nimport rm \"" + module + "/remoting\"\n\nvar _ = rm.NewClient(rm.ClientConfig{}, nil)\n"
	if err := os.WriteFile(filepath.Join(dir, "x.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ownDialers(t, dir); len(got) != 2 {
		t.Errorf("found %q, want NewClient and ClientConfig", got)
	}
}
