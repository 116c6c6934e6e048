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
	// servers are the packages a client tool never links (the store calls Linux-only functions).
	servers = []string{"app/...", "broker/...", "store", "ha", "raftlog", "namesrv", "proxy", "filter"}
	// clientTools are the tools and their mains: clients of the wire only.
	clientTools = []string{"cmd/mqadmin", "cmd/mqbench", "cmd/mqchaos", "tools/admin", "tools/bench",
		"tools/chaos", "tools/console"}
	// leaves are the shared words of the wire and the record: they import nothing of ours.
	leaves = []string{"message", "protocol", "remoting"}
	// engines are the broker's engines, each in broker/internal/<name>, behind interfaces it owns.
	// TestEnginesAreListed fails on a package under broker/internal that is in no engine here.
	engines = []string{"pop", "delay", "txcheck", "stats"}
)

// rules are ARCHITECTURE.md's import rules.
var rules = append([]rule{
	{why: "the leaf packages import nothing of ours but each other's leaves: store may use message and the atomic file writer only",
		from: []string{"store"}, never: without(ours(), "store", "message"), allow: []string{"internal/atomicfile"}},
	{why: "message, protocol and remoting are leaves: they import nothing of ours",
		from: leaves, never: ours()},
	{why: "internal/ holds foundations and the test kit: it imports only the leaf packages",
		from: []string{"internal/..."}, never: without(ours(), append(slices.Clone(leaves), "internal/...")...)},
	{why: "the name server never imports the broker or its replication and storage",
		from: []string{"namesrv"}, never: []string{"broker/...", "store", "ha", "raftlog"}},
	{why: "the classic HA and the Raft log are apart", from: []string{"ha"}, never: []string{"raftlog"}},
	{why: "the classic HA and the Raft log are apart", from: []string{"raftlog"}, never: []string{"ha"}},
	{why: "the native client imports only the leaf packages remoting, protocol and message",
		from: []string{"client"}, never: append(without(ours(), "message", "protocol", "remoting"), "github.com/hashicorp/raft/...")},
	{why: "tools are clients of the wire: they import only the client side (client, acl's file and signatures, proxy/v2pb's messages, the leaves, internal/), never a server nor hashicorp/raft, so they build for darwin and windows",
		from: clientTools, never: append(without(ours(), "client", "acl", "proxy/v2pb", "message", "protocol", "remoting", "internal/...", "tools/..."),
			"github.com/hashicorp/raft/...")},
	{why: "the gRPC endpoint reaches brokers only through the one native client, or in local mode through proxy.Local, which the broker implements",
		from: []string{"proxy", "proxy/v2pb"}, never: append(without(ours(), "acl", "client", "message", "protocol", "proxy/v2pb", "remoting"),
			"github.com/hashicorp/raft/..."),
		// acl (the v5 signatures are checked against the broker's ACL file) writes that file with it.
		allow: []string{"internal/atomicfile"}},
	{why: "only cmd/, e2e and tests import app/ (the composition roots)",
		from: without(ours(), "app/...", "cmd/..."), never: []string{"app/..."}},
	{why: "nothing imports a command", from: []string{"..."}, never: []string{"cmd/..."}},
}, engineRules()...)

// engineRules: an engine under broker/internal never reaches the broker, another engine, the replication
// or the network; it takes what it uses as interfaces of its own.
func engineRules() []rule {
	var out []rule
	for _, e := range engines {
		out = append(out, rule{
			why:   "the broker's engines (broker/internal/...) never import each other or the broker, its replication or the network: each takes what it uses as interfaces of its own",
			from:  []string{"broker/internal/" + e + "/..."},
			never: []string{"broker/...", "app/...", "ha", "raftlog", "namesrv", "proxy", "proxy/v2pb", "client", "remoting", "tools/..."},
			allow: []string{"broker/internal/" + e + "/..."},
		})
	}
	return out
}

// ours lists the packages of the module that rules speak of.
func ours() []string {
	return []string{"acl", "app/...", "broker/...", "client", "filter", "ha", "message", "namesrv", "protocol", "proxy", "proxy/v2pb",
		"raftlog", "remoting", "store", "internal/...", "tools/...", "cmd/..."}
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

// goList runs go list -f format over the module's packages (production code only: tests may import what
// they like) and returns each package's path with the fields format printed after it.
func goList(t *testing.T, format string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} "+format, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	list := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		list[f[0]] = f[1:]
	}
	return list
}

// moduleDeps returns every package's transitive dependencies.
func moduleDeps(t *testing.T) map[string][]string {
	return goList(t, `{{join .Deps " "}}`)
}

func TestImportRules(t *testing.T) {
	deps := moduleDeps(t)
	for _, p := range []string{"store", "broker", "namesrv", "cmd/mqadmin", "cmd/mqbench", "tools/admin", "app/servers", "internal/metrics"} {
		if _, ok := deps[module+"/"+p]; !ok {
			t.Fatalf("go list did not list %s: the rules would check nothing", p)
		}
	}
	for _, v := range violations(deps, rules) {
		t.Error(v)
	}
}

// TestEnginesAreListed: every package under broker/internal belongs to an engine the rules know, so a new
// engine cannot escape them.
func TestEnginesAreListed(t *testing.T) {
	for p := range moduleDeps(t) {
		rest, ok := strings.CutPrefix(p, module+"/broker/internal/")
		if !ok {
			continue
		}
		if e, _, _ := strings.Cut(rest, "/"); !slices.Contains(engines, e) {
			t.Errorf("%s: an engine the import rules do not know; add %q to engines in arch_test.go", p, e)
		}
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
		{"internal imports acl", map[string][]string{m("internal/conf"): {m("acl")}}, "internal/conf depends on acl"},
		{"the test kit imports the broker", map[string][]string{m("internal/testutil"): {m("internal/freeport"), m("broker")}},
			"internal/testutil depends on broker"},
		{"internal imports a tool", map[string][]string{m("internal/metrics"): {m("tools/admin")}}, "internal/metrics depends on tools/admin"},
		{"internal imports the client", map[string][]string{m("internal/faultnet"): {m("client")}}, "internal/faultnet depends on client"},
		{"namesrv through acl to broker", map[string][]string{m("namesrv"): {m("acl"), m("broker")}}, "namesrv depends on broker"},
		{"ha imports raftlog", map[string][]string{m("ha"): {m("raftlog")}}, "ha depends on raftlog"},
		{"raftlog imports ha", map[string][]string{m("raftlog"): {m("ha")}}, "raftlog depends on ha"},
		{"mqbench links the broker", map[string][]string{m("cmd/mqbench"): {m("tools/bench"), m("broker")}},
			"cmd/mqbench depends on broker"},
		{"mqadmin links raft", map[string][]string{m("tools/admin"): {"github.com/hashicorp/raft"}},
			"tools/admin depends on github.com/hashicorp/raft"},
		{"a tool imports the gRPC endpoint", map[string][]string{m("tools/bench"): {m("proxy/v2pb"), m("proxy")}},
			"tools/bench depends on proxy"},
		{"a tool imports the in-process cluster", map[string][]string{m("tools/chaos"): {m("app/cluster")}},
			"tools/chaos depends on app/cluster"},
		{"a tool imports a broker engine", map[string][]string{m("tools/console"): {m("broker/internal/stats")}},
			"tools/console depends on broker/internal/stats"},
		{"a tool imports filter", map[string][]string{m("tools/admin"): {m("filter")}}, "tools/admin depends on filter"},
		{"client imports the broker", map[string][]string{m("client"): {m("remoting"), m("broker")}}, "client depends on broker"},
		{"the proxy links the store", map[string][]string{m("proxy"): {m("client"), m("store")}}, "proxy depends on store"},
		{"the proxy imports internal", map[string][]string{m("proxy/v2pb"): {m("internal/logging")}}, "proxy/v2pb depends on internal/logging"},
		{"client imports acl", map[string][]string{m("client"): {m("acl")}}, "client depends on acl"},
		{"client imports internal", map[string][]string{m("client"): {m("internal/testutil")}}, "client depends on internal/testutil"},
		{"the pop engine imports the broker", map[string][]string{m("broker/internal/pop"): {m("store"), m("broker")}},
			"broker/internal/pop depends on broker"},
		{"an engine imports another", map[string][]string{m("broker/internal/delay"): {m("store"), m("broker/internal/stats")}},
			"broker/internal/delay depends on broker/internal/stats"},
		{"an engine imports the network", map[string][]string{m("broker/internal/txcheck"): {m("remoting")}},
			"broker/internal/txcheck depends on remoting"},
		{"the broker imports app", map[string][]string{m("broker"): {m("app/cluster")}}, "broker depends on app/cluster"},
		{"internal imports app", map[string][]string{m("internal/testutil"): {m("app/cluster")}}, "internal/testutil depends on app/cluster"},
		{"a package imports a command", map[string][]string{m("app/cluster"): {m("cmd/mqbroker")}},
			"app/cluster depends on cmd/mqbroker"},
	} {
		got := violations(tc.deps, rules)
		if !slices.ContainsFunc(got, func(v string) bool { return strings.HasPrefix(v, tc.want+":") }) {
			t.Errorf("%s: violations %q, want one starting %q", tc.name, got, tc.want)
		}
	}
	ok := map[string][]string{
		m("store"):                   {m("message"), m("internal/atomicfile"), "golang.org/x/sys/unix"},
		m("namesrv"):                 {m("acl"), m("protocol"), m("remoting")},
		m("internal/testutil"):       {m("internal/freeport"), m("protocol")},
		m("tools/admin"):             {m("client"), m("tools/console"), m("protocol"), m("message"), m("remoting"), m("acl"), "github.com/hashicorp/raft-boltdb/v2"},
		m("tools/bench"):             {m("client"), m("proxy/v2pb"), m("internal/metrics")},
		m("broker"):                  {m("store"), m("ha"), m("raftlog"), m("broker/internal/pop")},
		m("broker/internal/pop"):     {m("store"), m("protocol"), m("message"), m("internal/metrics")},
		m("broker/internal/pop/sub"): {m("broker/internal/pop")},
		m("client"):                  {m("remoting"), m("protocol"), m("message")},
		m("app/servers"):             {m("broker"), m("namesrv"), m("proxy")},
		m("cmd/mqbroker"):            {m("app/servers")},
	}
	if got := violations(ok, rules); len(got) > 0 {
		t.Errorf("allowed graph reported: %q", got)
	}
}
