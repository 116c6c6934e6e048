package archtest

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "TestDiagram: rewrite ARCHITECTURE.md's import diagram from go list")

// diagramMark is the line of ARCHITECTURE.md above the fenced block that TestDiagram draws.
const diagramMark = "<!-- the import floors, drawn from go list by: go test ./internal/archtest -run TestDiagram -update -->"

// room names the part of the house a package belongs to: cmd/ (the mains), internal/ (foundations and test
// kit), each folder under app/, tools/ and broker/internal/, proxy/v2pb, else its top-level folder.
func room(p string) string {
	p = strings.TrimPrefix(p, module+"/")
	parts := strings.Split(p, "/")
	switch {
	case parts[0] == "cmd" || parts[0] == "internal":
		return parts[0] + "/"
	case (parts[0] == "app" || parts[0] == "tools") && len(parts) > 1:
		return parts[0] + "/" + parts[1]
	case len(parts) > 2 && parts[0] == "broker" && parts[1] == "internal":
		return strings.Join(parts[:3], "/")
	case p == "proxy/v2pb":
		return p
	}
	return parts[0]
}

// floors draws the rooms from the top floor down, each with the rooms it imports directly (production
// code). A room stands one floor above the highest room it imports; the ground floor imports nothing of ours.
func floors(imports map[string][]string) string {
	edges := map[string]map[string]bool{}
	for p, imps := range imports {
		r := room(p)
		if r == "e2e" || strings.HasPrefix(p, module+"/internal/archtest") {
			continue // tests only
		}
		if edges[r] == nil {
			edges[r] = map[string]bool{}
		}
		for _, i := range imps {
			if match("...", i) && room(i) != r {
				edges[r][room(i)] = true
			}
		}
	}
	floor := map[string]int{}
	var height func(r string, seen []string) int
	height = func(r string, seen []string) int {
		if f, ok := floor[r]; ok {
			return f
		}
		if slices.Contains(seen, r) {
			return 0 // a circle between rooms: the rules report it; draw it flat
		}
		h := 1
		for d := range edges[r] {
			h = max(h, height(d, append(seen, r))+1)
		}
		floor[r] = h
		return h
	}
	top := 0
	for r := range edges {
		top = max(top, height(r, nil))
	}
	width := 20 // the room column: as wide as the longest name
	for r := range edges {
		width = max(width, len(r))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "floor  %-*s  imports (rooms, production code)\n", width, "room")
	for f := top; f >= 1; f-- {
		var rooms []string
		for r := range edges {
			if floor[r] == f {
				rooms = append(rooms, r)
			}
		}
		slices.Sort(rooms)
		for _, r := range rooms {
			deps := make([]string, 0, len(edges[r]))
			for d := range edges[r] {
				deps = append(deps, d)
			}
			slices.SortFunc(deps, func(a, b string) int {
				if floor[a] != floor[b] {
					return floor[b] - floor[a]
				}
				return strings.Compare(a, b)
			})
			line := fmt.Sprintf("%5d  %-*s", f, width, r)
			if len(deps) > 0 {
				line += "  -> "
			}
			indent := len(line)
			for i, d := range deps {
				if i > 0 && len(line)+1+len(d) > 110 {
					b.WriteString(strings.TrimRight(line, " ") + "\n")
					line = strings.Repeat(" ", indent)
				} else if i > 0 {
					line += " "
				}
				line += d
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
	return b.String()
}

// TestDiagram: the import diagram of ARCHITECTURE.md is the one go list gives today (-update rewrites it).
func TestDiagram(t *testing.T) {
	want := floors(goList(t, `{{join .Imports " "}}`))
	path := filepath.Join("..", "..", "ARCHITECTURE.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == diagramMark })
	if at < 0 || at+1 >= len(lines) || !strings.HasPrefix(lines[at+1], "```") {
		t.Fatalf("ARCHITECTURE.md: no line %q followed by a fenced block", diagramMark)
	}
	end := at + 2
	for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
		end++
	}
	if end == len(lines) {
		t.Fatal("ARCHITECTURE.md: the import diagram's block is not closed")
	}
	got := strings.Join(lines[at+2:end], "")
	if got == want {
		return
	}
	if !*update {
		t.Fatalf("ARCHITECTURE.md's import diagram is not the one go list gives (go test ./internal/archtest -run TestDiagram -update rewrites it); want:\n%s", want)
	}
	out := strings.Join(lines[:at+2], "") + want + strings.Join(lines[end:], "")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The drawing itself: a room stands above what it imports; packages of one room are one box.
func TestFloorsAreDrawn(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	got := floors(map[string][]string{
		m("cmd/mqbroker"):        {m("app/servers"), "os"},
		m("app/servers"):         {m("broker"), m("internal/conf")},
		m("broker"):              {m("store"), m("broker/internal/pop")},
		m("broker/internal/pop"): {m("store")},
		m("store"):               {m("message"), m("internal/atomicfile")},
		m("message"):             nil,
		m("internal/conf"):       nil,
		m("internal/atomicfile"): nil,
	})
	want := `floor  room                  imports (rooms, production code)
    6  cmd/                  -> app/servers
    5  app/servers           -> broker internal/
    4  broker                -> broker/internal/pop store
    3  broker/internal/pop   -> store
    2  store                 -> internal/ message
    1  internal/
    1  message
`
	if got != want {
		t.Errorf("floors:\n%s\nwant:\n%s", got, want)
	}
}
