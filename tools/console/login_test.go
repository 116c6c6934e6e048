package console

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

const loginACL = `accounts:
  - accessKey: consoleAdmin
    secretKey: adminSecret123
    admin: true
  - accessKey: viewer01
    secretKey: viewerSecret1
`

func writeLoginACL(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(loginACL), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoginPolicy(t *testing.T) {
	acl := writeLoginACL(t)
	base := Config{Source: newFakeSource(), SampleInterval: time.Second, History: time.Minute}
	for _, c := range []struct {
		listen  string
		login   bool
		aclFile string
		want    string // LoginStatus prefix, or the error's
	}{
		{"127.0.0.1:0", false, "", "login off (--listen 127.0.0.1:0 is loopback only"},
		{"localhost:0", false, "", "login off"},
		{"[::1]:0", false, "", "login off"},
		{"127.0.0.1:0", true, acl, "login required (--login; accounts of " + acl},
		{"0.0.0.0:0", false, acl, "login required (--listen 0.0.0.0:0 reaches beyond loopback"},
		{":0", false, acl, "login required (--listen :0 reaches beyond loopback"},
		{"console.example:0", false, acl, "login required"},
		{"0.0.0.0:0", false, "", "--aclFile: the console requires a login (--listen 0.0.0.0:0 reaches beyond loopback)"},
		{"127.0.0.1:0", true, "", "--aclFile: the console requires a login (--login)"},
		{"0.0.0.0:0", false, acl + ".gone", "--aclFile: acl: read"},
	} {
		cfg := base
		cfg.Listen, cfg.RequireLogin, cfg.AclFile = c.listen, c.login, c.aclFile
		s, err := New(cfg)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = s.LoginStatus()
			_ = s.Close()
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("listen %s, login %v, aclFile %q: %q, want %q...", c.listen, c.login, c.aclFile, got, c.want)
		}
	}
}

// loginClient is a browser stand-in: a cookie jar, and the headers the pages send.
type loginClient struct {
	t    *testing.T
	base string
	hc   *http.Client
	csrf string
}

func (c *loginClient) do(method, path, body string, header map[string]string) (*http.Response, map[string]any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set(requestHeader, "1")
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp, m
}

func (c *loginClient) want(status int, method, path, body string, header map[string]string) map[string]any {
	c.t.Helper()
	resp, m := c.do(method, path, body, header)
	if resp.StatusCode != status {
		c.t.Fatalf("%s %s: %d %v, want %d", method, path, resp.StatusCode, m, status)
	}
	return m
}

func startLoginConsole(t *testing.T, src *fakeSource, tlsFiles ...string) (*Server, *loginClient) {
	t.Helper()
	cfg := Config{Listen: "127.0.0.1:0", Source: src, SampleInterval: time.Second, History: time.Minute,
		RequireLogin: true, AclFile: writeLoginACL(t)}
	hc := &http.Client{Timeout: 10 * time.Second}
	if len(tlsFiles) == 2 {
		cfg.TLSCertPath, cfg.TLSKeyPath = tlsFiles[0], tlsFiles[1]
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the test's own self-signed certificate
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	hc.Jar, _ = cookiejar.New(nil)
	return s, &loginClient{t: t, base: strings.TrimSuffix(s.URL(), "/"), hc: hc}
}

// TestLoginSessionsAndCSRF drives the login over HTTP: without a session the API answers 401 (the pages
// themselves load); a wrong secret, or a login without the pages' header, is refused; a login sets an
// HttpOnly SameSite=Strict cookie (not Secure over plain HTTP); changes then need the session's CSRF token
// and the console's own Origin, and are signed with the session's account; logout ends the session.
func TestLoginSessionsAndCSRF(t *testing.T) {
	src := newFakeSource()
	s, c := startLoginConsole(t, src)
	if m := c.want(http.StatusUnauthorized, "GET", "/api/cluster", "", nil); m["needLogin"] != true {
		t.Fatalf("no session: %v", m)
	}
	c.want(http.StatusOK, "GET", "/index.html", "", nil)
	c.want(http.StatusUnauthorized, "GET", "/api/session", "", nil)
	topic := `{"topic":"New","cluster":"DefaultCluster"}`
	c.want(http.StatusUnauthorized, "POST", "/api/topics", topic, nil)

	c.want(http.StatusUnauthorized, "POST", "/api/login", `{"accessKey":"consoleAdmin","secretKey":"guessed-1"}`, nil)
	c.want(http.StatusUnauthorized, "POST", "/api/login", `{"accessKey":"nobody","secretKey":"adminSecret123"}`, nil)
	c.want(http.StatusForbidden, "POST", "/api/login", `{"accessKey":"consoleAdmin","secretKey":"adminSecret123"}`,
		map[string]string{requestHeader: ""})
	c.want(http.StatusForbidden, "POST", "/api/login", `{"accessKey":"consoleAdmin","secretKey":"adminSecret123"}`,
		map[string]string{"Origin": "http://evil.example"})

	resp, m := c.do("POST", "/api/login", `{"accessKey":"consoleAdmin","secretKey":"adminSecret123"}`, nil)
	if resp.StatusCode != http.StatusOK || m["accessKey"] != "consoleAdmin" || m["csrfToken"] == "" {
		t.Fatalf("login: %d %v", resp.StatusCode, m)
	}
	c.csrf = m["csrfToken"].(string)
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == cookiePlain {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Secure || cookie.Path != "/" {
		t.Fatalf("session cookie over plain HTTP: %+v (want HttpOnly, SameSite=Strict, Path=/, not Secure)", cookie)
	}
	if strings.Contains(resp.Header.Get("Set-Cookie"), "adminSecret123") {
		t.Fatal("the cookie carries the secret key")
	}
	c.want(http.StatusOK, "GET", "/api/cluster", "", nil)
	if m := c.want(http.StatusOK, "GET", "/api/session", "", nil); m["csrfToken"] != c.csrf || m["admin"] != true {
		t.Fatalf("session: %v", m)
	}

	// Changes: the CSRF token, and no other origin.
	c.want(http.StatusForbidden, "POST", "/api/topics", topic, nil)
	c.want(http.StatusForbidden, "POST", "/api/topics", topic, map[string]string{csrfHeader: c.csrf + "x"})
	c.want(http.StatusForbidden, "POST", "/api/topics", topic, map[string]string{csrfHeader: c.csrf, "Origin": "http://evil.example"})
	c.want(http.StatusForbidden, "POST", "/api/topics", topic, map[string]string{csrfHeader: c.csrf, "Sec-Fetch-Site": "cross-site"})
	c.want(http.StatusForbidden, "POST", "/api/topics", topic, map[string]string{csrfHeader: c.csrf, "Sec-Fetch-Site": "same-site"})
	if a := src.lastAdmin(); a != nil {
		t.Fatalf("a refused change reached the cluster: %+v", a.specs)
	}
	c.want(http.StatusOK, "POST", "/api/topics", topic, map[string]string{csrfHeader: c.csrf, "Origin": c.base, "Sec-Fetch-Site": "same-origin"})
	if a := src.lastAdmin(); a == nil || a.creds.AccessKey != "consoleAdmin" || a.creds.SecretKey != remoting.Secret("adminSecret123") {
		t.Fatalf("the change was not signed with the session's account: %+v", a)
	}
	// An admin account given in the headers still wins over the session's.
	c.want(http.StatusOK, "POST", "/api/topics", topic, map[string]string{csrfHeader: c.csrf,
		accessKeyHeader: "otherAdmin", secretKeyHeader: "otherSecret1"})
	if a := src.lastAdmin(); a.creds.AccessKey != "otherAdmin" {
		t.Fatalf("header account: %+v", a.creds)
	}

	// Logout: needs the token too; the session is gone after it.
	c.want(http.StatusForbidden, "POST", "/api/logout", "", nil)
	c.want(http.StatusOK, "POST", "/api/logout", "", map[string]string{csrfHeader: c.csrf})
	c.want(http.StatusUnauthorized, "GET", "/api/cluster", "", nil)

	// A session ends after sessionIdle without a request.
	m = c.want(http.StatusOK, "POST", "/api/login", `{"accessKey":"viewer01","secretKey":"viewerSecret1"}`, nil)
	if m["admin"] == true {
		t.Fatalf("viewer01 is no admin: %v", m)
	}
	c.want(http.StatusOK, "GET", "/api/cluster", "", nil)
	start := time.Now()
	s.login.now = func() time.Time { return start.Add(sessionIdle + time.Minute) }
	c.want(http.StatusUnauthorized, "GET", "/api/cluster", "", nil)
}

// Over TLS (--tlsCertPath) the cookie is Secure under the __Host- prefix, and the Origin must be https.
func TestLoginOverTLS(t *testing.T) {
	certPEM, keyPEM, err := remoting.GenerateSelfSignedCert([]string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "console.crt"), filepath.Join(dir, "console.key")
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	src := newFakeSource()
	s, c := startLoginConsole(t, src, certPath, keyPath)
	if !strings.HasPrefix(s.URL(), "https://") {
		t.Fatalf("URL %s", s.URL())
	}
	resp, m := c.do("POST", "/api/login", `{"accessKey":"consoleAdmin","secretKey":"adminSecret123"}`, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login: %d %v", resp.StatusCode, m)
	}
	c.csrf = m["csrfToken"].(string)
	cookies := resp.Cookies()
	if len(cookies) != 1 || cookies[0].Name != cookieSecure || !cookies[0].Secure || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie over TLS: %+v", cookies)
	}
	plainOrigin := strings.Replace(c.base, "https://", "http://", 1)
	c.want(http.StatusForbidden, "POST", "/api/topics", `{"topic":"T","cluster":"DefaultCluster"}`,
		map[string]string{csrfHeader: c.csrf, "Origin": plainOrigin})
	c.want(http.StatusOK, "POST", "/api/topics", `{"topic":"T","cluster":"DefaultCluster"}`,
		map[string]string{csrfHeader: c.csrf, "Origin": c.base})
}

// Without a login (loopback), a change from another origin is refused all the same.
func TestCrossSiteChangeRefusedWithoutLogin(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src)
	req := change("POST", "/api/topics", `{"topic":"New","cluster":"DefaultCluster"}`, "Origin", "http://evil.example")
	callError(t, s, req, http.StatusForbidden, "cross-site request refused")
	if src.lastAdmin() != nil {
		t.Fatal("the cross-site change reached the cluster")
	}
}

// After loginFailures failed logins from one address within loginWindow, its logins are refused, the right
// secret too, until the window ends; a success clears the count.
func TestLoginThrottle(t *testing.T) {
	s, c := startLoginConsole(t, newFakeSource())
	var mu sync.Mutex
	now := time.Now()
	s.login.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	good, bad := `{"accessKey":"viewer01","secretKey":"viewerSecret1"}`, `{"accessKey":"viewer01","secretKey":"guess"}`
	c.want(http.StatusUnauthorized, "POST", "/api/login", bad, nil)
	c.want(http.StatusOK, "POST", "/api/login", good, nil) // clears the count
	for range loginFailures {
		c.want(http.StatusUnauthorized, "POST", "/api/login", bad, nil)
	}
	if m := c.want(http.StatusTooManyRequests, "POST", "/api/login", good, nil); !strings.Contains(m["error"].(string), "try again in") {
		t.Fatalf("throttled login: %v", m)
	}
	mu.Lock()
	now = now.Add(loginWindow)
	mu.Unlock()
	c.want(http.StatusOK, "POST", "/api/login", good, nil)
}
