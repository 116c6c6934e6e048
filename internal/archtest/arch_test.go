package archtest

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/rocketraft/rocketraft"

// rule forbids every package matched by from to depend, directly or through other packages, on any
// package in never, except those in allow (named exceptions to a pattern of never). Paths are relative to the module; a path ending in "/..." matches the folder and
// everything below it; a path with a dot in its first element is outside the module, as written.
type rule struct {
	why   string
	from  []string
	never []string
	allow []string
}

var (
	servers     = []string{"broker", "store", "ha", "raftlog", "namesrv"}
	clientTools = []string{"cmd/mqadmin", "cmd/mqbench", "cmd/mqchaos", "tools/admin", "tools/bench",
		"tools/chaos", "tools/console"}
)

// rules are ARCHITECTURE.md's import rules.
var rules = []rule{
	{why: "the leaf packages import nothing of ours but each other's leaves: store may use message and the atomic file writer only",
		from: []string{"store"}, never: without(ours(), "store", "message"), allow: []string{"internal/atomicfile"}},
	{why: "message, protocol and remoting are leaves: they import nothing of ours",
		from: []string{"message", "protocol", "remoting"}, never: ours()},
	{why: "the name server never imports the broker or its replication and storage",
		from: []string{"namesrv"}, never: []string{"broker", "store", "ha", "raftlog"}},
	{why: "the classic HA and the Raft log are apart", from: []string{"ha"}, never: []string{"raftlog"}},
	{why: "the classic HA and the Raft log are apart", from: []string{"raftlog"}, never: []string{"ha"}},
	{why: "the native client imports only the leaf packages remoting, protocol and message",
		from: []string{"client"}, never: append(without(ours(), "message", "protocol", "remoting"), "github.com/hashicorp/raft/...")},
	{why: "client tools build for darwin and windows: no server package, no hashicorp/raft",
		from: clientTools, never: append(slices.Clone(servers), "github.com/hashicorp/raft/...")},
	{why: "the gRPC endpoint reaches brokers only through the one native client, or in local mode through proxy.Local, which the broker implements",
		from: []string{"proxy/..."}, never: append(without(ours(), "acl", "client", "message", "protocol", "remoting"),
			"github.com/hashicorp/raft/..."),
		// acl (the v5 signatures are checked against the broker's ACL file) writes that file with it.
		allow: []string{"internal/atomicfile"}},
	{why: "the broker's engines (broker/internal/...) take what they use as interfaces of their own: they never reach the broker, its replication or the network",
		from: []string{"broker/internal/..."}, never: []string{"broker", "ha", "raftlog", "namesrv", "proxy/...", "client", "remoting"}},
	{why: "nothing imports a command", from: []string{"..."}, never: []string{"cmd/..."}},
}

// ours lists the top-level packages of the module that rules speak of.
func ours() []string {
	return []string{"acl", "broker", "client", "filter", "ha", "message", "namesrv", "protocol", "proxy", "raftlog", "remoting",
		"store", "internal/...", "cmd/..."}
}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

// match reports whether the import path p is matched by the pattern pat (see rule).
func match(pat, p string) bool {
	if pat == "..." {
		return p == module || strings.HasPrefix(p, module+"/")
	}
	if first, _, _ := strings.Cut(pat, "/"); !strings.Contains(first, ".") {
		pat = module + "/" + pat
	}
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pat
}

// violations checks deps (package -> every package it depends on, transitively) against rules.
func violations(deps map[string][]string, rules []rule) []string {
	var out []string
	pkgs := make([]string, 0, len(deps))
	for p := range deps {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, r := range rules {
		for _, p := range pkgs {
			if !slices.ContainsFunc(r.from, func(f string) bool { return match(f, p) }) {
				continue
			}
			for _, d := range deps[p] {
				if d == p || slices.ContainsFunc(r.allow, func(a string) bool { return match(a, d) }) {
					continue
				}
				if slices.ContainsFunc(r.never, func(n string) bool { return match(n, d) }) {
					out = append(out, fmt.Sprintf("%s depends on %s: %s", strings.TrimPrefix(p, module+"/"),
						strings.TrimPrefix(d, module+"/"), r.why))
				}
			}
		}
	}
	return out
}

// moduleDeps runs go list over the module (production code only: tests may import what they like) and
// returns every package's transitive dependencies.
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps[f[0]] = f[1:]
	}
	return deps
}

func TestImportRules(t *testing.T) {
	deps := moduleDeps(t)
	for _, p := range []string{"store", "broker", "namesrv", "cmd/mqadmin", "cmd/mqbench", "tools/admin"} {
		if _, ok := deps[module+"/"+p]; !ok {
			t.Fatalf("go list did not list %s: the rules would check nothing", p)
		}
	}
	for _, v := range violations(deps, rules) {
		t.Error(v)
	}
}

// The checker itself: each rule catches a graph that breaks it, directly or through another package.
func TestViolationsAreFound(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	for _, tc := range []struct {
		name string
		deps map[string][]string
		want string
	}{
		{"store imports broker", map[string][]string{m("store"): {m("message"), m("broker")}}, "store depends on broker"},
		{"store imports internal", map[string][]string{m("store"): {m("internal/metrics")}}, "store depends on internal/metrics"},
		{"protocol imports remoting", map[string][]string{m("protocol"): {m("remoting")}}, "protocol depends on remoting"},
		{"namesrv through acl to broker", map[string][]string{m("namesrv"): {m("acl"), m("broker")}}, "namesrv depends on broker"},
		{"ha imports raftlog", map[string][]string{m("ha"): {m("raftlog")}}, "ha depends on raftlog"},
		{"raftlog imports ha", map[string][]string{m("raftlog"): {m("ha")}}, "raftlog depends on ha"},
		{"mqbench links the broker", map[string][]string{m("cmd/mqbench"): {m("tools/bench"), m("broker")}},
			"cmd/mqbench depends on broker"},
		{"mqadmin links raft", map[string][]string{m("tools/admin"): {"github.com/hashicorp/raft"}},
			"tools/admin depends on github.com/hashicorp/raft"},
		{"client imports the broker", map[string][]string{m("client"): {m("remoting"), m("broker")}}, "client depends on broker"},
		{"the proxy links the store", map[string][]string{m("proxy"): {m("client"), m("store")}}, "proxy depends on store"},
		{"the proxy imports internal", map[string][]string{m("proxy/v2pb"): {m("internal/logging")}}, "proxy/v2pb depends on internal/logging"},
		{"client imports acl", map[string][]string{m("client"): {m("acl")}}, "client depends on acl"},
		{"client imports internal", map[string][]string{m("client"): {m("internal/testutil")}}, "client depends on internal/testutil"},
		{"the pop engine imports the broker", map[string][]string{m("broker/internal/pop"): {m("store"), m("broker")}},
			"broker/internal/pop depends on broker"},
		{"a package imports a command", map[string][]string{m("app/cluster"): {m("cmd/mqbroker")}},
			"app/cluster depends on cmd/mqbroker"},
	} {
		got := violations(tc.deps, rules)
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, tc.want+":") }) {
			t.Errorf("%s: violations %q, want one starting %q", tc.name, got, tc.want)
		}
	}
	ok := map[string][]string{
		m("store"):               {m("message"), "golang.org/x/sys/unix"},
		m("namesrv"):             {m("acl"), m("protocol"), m("remoting")},
		m("tools/admin"):         {m("protocol"), m("message"), m("remoting"), "github.com/hashicorp/raft-boltdb/v2"},
		m("broker"):              {m("store"), m("ha"), m("raftlog"), m("broker/internal/pop")},
		m("broker/internal/pop"): {m("store"), m("protocol"), m("message"), m("internal/metrics")},
		m("client"):              {m("remoting"), m("protocol"), m("message")},
	}
	if got := violations(ok, rules); len(got) > 0 {
		t.Errorf("allowed graph reported: %q", got)
	}
}
