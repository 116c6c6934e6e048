package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/console"
)

// startLoginConsole serves the console for the cluster with a login required (--login), the accounts of
// aclFile, until cleanup.
func startLoginConsole(t *testing.T, c *cluster.Cluster) *console.Server {
	t.Helper()
	aclPath := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclPath, []byte(aclFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return startConsoleWith(t, c, remoting.Credentials{}, func(cfg *console.Config) {
		cfg.RequireLogin, cfg.AclFile = true, aclPath
	})
}

// fetchStatus is the page's fetch of path (same origin, with the page's cookies): the HTTP status.
func fetchStatus(path string) string {
	return fmt.Sprintf(`fetch(%q, {credentials: 'same-origin'}).then(r => r.status)`, path)
}

// TestBrowserLogin: with a login required, the page shows the login form and the API refuses the page
// without a session; a wrong secret is refused on the form; the account of the ACL file logs in, the pages
// load, and a topic created from the page (a change carrying the session's CSRF token) reaches the cluster.
// Then a page of another origin on the same host (same site: the SameSite cookie goes along) posts HTML
// forms to the console, a topic creation and a logout: both are refused as cross-site, nothing is created
// and the session lives on. The header's logout ends it.
func TestBrowserLogin(t *testing.T) {
	t.Parallel() // each has its own cluster and tab; most of their time is waiting on pages
	c := cluster.Start(t, cluster.Options{})
	srv := startLoginConsole(t, c)
	if got := srv.LoginStatus(); !strings.HasPrefix(got, "login required (--login") {
		t.Fatalf("login status %q", got)
	}
	b := newBrowser(t, srv.Addr())

	b.waitJS("the login form", `!!document.getElementById('login-form')`)
	if got := run(b, "fetch without a session", chromedp.Evaluate[int](fetchStatus("/api/cluster"), chromedp.EvalAwaitPromise)); got != http.StatusUnauthorized {
		t.Fatalf("GET /api/cluster without a session: %d, want 401", got)
	}
	b.open("#/topics") // a page asked for directly shows the login form too
	b.waitJS("the login form on #/topics", `!!document.getElementById('login-form') && !document.getElementById('topics-table')`)
	b.screenshot("login-form")

	login := func(ak, sk string) {
		b.do("fill the login form",
			chromedp.WaitVisible(chromedp.CSS(`#login-form`)),
			chromedp.SetValue(chromedp.CSS(`#login-form input[name=accessKey]`), ak),
			chromedp.SetValue(chromedp.CSS(`#login-form input[name=secretKey]`), sk),
			chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)))
	}
	login("rocketmqAdmin", "wrongSecret99")
	b.waitJS("the refusal", `((document.querySelector('#login-form .notice.error')||{}).textContent||'').includes('login refused')`)
	b.screenshot("login-refused")
	login("rocketmqAdmin", "adminSecret123")
	b.waitJS("the topics page after the login", `!!document.getElementById('topics-table')`)
	b.waitJS("the account in the header", `document.getElementById('session-user').textContent === 'Logged in as rocketmqAdmin'`)
	if got := run(b, "fetch with the session", chromedp.Evaluate[int](fetchStatus("/api/cluster"), chromedp.EvalAwaitPromise)); got != http.StatusOK {
		t.Fatalf("GET /api/cluster with the session: %d, want 200", got)
	}
	const topic = "LoginTopic"
	b.createTopic(topic, 2)
	b.waitJS("the topic created", `!!document.querySelector('#create-topic-form .notice.ok')`)
	c.WaitTopicRoute(topic)
	b.screenshot("logged-in")

	// The other origin: same host, another port. Its forms post JSON-looking text/plain bodies, as a
	// forger's page would.
	consoleURL := strings.TrimSuffix(srv.URL(), "/")
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		action := consoleURL + "/api/topics"
		if r.URL.Path == "/logout" {
			action = consoleURL + "/api/logout"
		}
		fmt.Fprintf(w, `<!doctype html><form id="f" method="POST" action=%q enctype="text/plain">`+
			`<input type="hidden" name='{"topic":"ForgedTopic","cluster":"DefaultCluster","x":"' value='"}'></form>`+
			`<script>document.getElementById('f').submit()</script>`, action)
	}))
	t.Cleanup(attacker.Close)
	for _, path := range []string{"/create", "/logout"} {
		b.do("open the other origin's page "+path, chromedp.Navigate(attacker.URL+path))
		b.waitJS("the console's refusal of "+path, `location.href.startsWith(`+fmt.Sprintf("%q", consoleURL)+`) && `+
			`document.body.innerText.includes('cross-site request refused')`)
		b.screenshot("cross-site" + strings.ReplaceAll(path, "/", "-"))
	}
	b.open("#/topics")
	b.waitJS("the topics page: still logged in", `!!document.getElementById('topics-table')`)
	b.waitJS("the topic list", fmt.Sprintf(`!!document.querySelector('#topics-table tr[data-topic=%q]')`, topic))
	if found := run(b, "look for the forged topic", chromedp.Evaluate[bool](`!!document.querySelector('#topics-table tr[data-topic="ForgedTopic"]')`)); found {
		t.Fatal("the cross-site form created its topic")
	}

	b.do("log out", chromedp.Click(chromedp.CSS(`#logout-button`)))
	b.waitJS("the login form after logout", `!!document.getElementById('login-form')`)
	if got := run(b, "fetch after logout", chromedp.Evaluate[int](fetchStatus("/api/cluster"), chromedp.EvalAwaitPromise)); got != http.StatusUnauthorized {
		t.Fatalf("GET /api/cluster after logout: %d, want 401", got)
	}
}
