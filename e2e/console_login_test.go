package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/tools/admin"
	"github.com/rocketraft/rocketraft/tools/console"
)

// TestConsoleLoginBrokerACL serves the console with a login (--login) against a cluster with ACL on, given
// the brokers' own plain_acl.yml, and drives it over HTTP as the pages do: no session, 401; the reader logs
// in and its topic creation (signed with the session's account) is refused by the broker; after logout the
// admin logs in and creates the topic, which reaches the broker; a change from another origin, or without
// the session's CSRF token, is refused and creates nothing.
func TestConsoleLoginBrokerACL(t *testing.T) {
	c := startSecureCluster(t, true, remoting.TLSDisabled)
	log := cluster.TestLogger(t, 0)
	client := admin.NewClient(c.NamesrvAddrs(), 5*time.Second, remoting.Credentials{AccessKey: aclReader.AccessKey,
		SecretKey: remoting.Secret(aclReader.SecretKey)}, log)
	t.Cleanup(func() { _ = client.Close() })
	srv, err := console.New(console.Config{Listen: "127.0.0.1:0", Source: admin.NewConsoleSource(client, log), Logger: log,
		SampleInterval: time.Second, History: time.Minute, RequireLogin: true, AclFile: c.Broker(0).Config().ACL.AclPath()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	base := strings.TrimSuffix(srv.URL(), "/")
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 15 * time.Second}
	csrf := ""
	call := func(method, path, body string, header ...string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if method != http.MethodGet {
			req.Header.Set("X-Console-Request", "1")
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-CSRF-Token", csrf)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		return resp.StatusCode, m
	}
	login := func(ak, sk string) {
		t.Helper()
		status, m := call("POST", "/api/login", `{"accessKey":"`+ak+`","secretKey":"`+sk+`"}`)
		if status != http.StatusOK {
			t.Fatalf("login %s: %d %v", ak, status, m)
		}
		csrf, _ = m["csrfToken"].(string)
	}
	const topic = "ConsoleLoginTopic"
	create := `{"topic":"` + topic + `","cluster":"` + c.Broker(0).Config().BrokerClusterName + `"}`

	if status, m := call("GET", "/api/cluster", ""); status != http.StatusUnauthorized || m["needLogin"] != true {
		t.Fatalf("no session: %d %v", status, m)
	}
	if status, _ := call("POST", "/api/login", `{"accessKey":"rocketmqAdmin","secretKey":"notTheSecret1"}`); status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d", status)
	}
	login(aclReader.AccessKey, aclReader.SecretKey)
	if status, m := call("GET", "/api/cluster", ""); status != http.StatusOK || m["acl"] != true {
		t.Fatalf("cluster as the reader: %d %v", status, m)
	}
	if status, m := call("POST", "/api/topics", create); status != http.StatusForbidden ||
		!strings.Contains(m["error"].(string), aclReader.AccessKey) {
		t.Fatalf("the reader's topic creation: %d %v, want the broker's refusal naming the account", status, m)
	}
	if status, _ := call("POST", "/api/logout", ""); status != http.StatusOK {
		t.Fatalf("logout: %d", status)
	}

	login(aclAdmin.AccessKey, aclAdmin.SecretKey)
	for name, h := range map[string][]string{
		"another origin":     {"Origin", "http://evil.example"},
		"no CSRF token":      {"X-CSRF-Token", ""},
		"a wrong CSRF token": {"X-CSRF-Token", "forged"},
	} {
		if status, m := call("POST", "/api/topics", create, h...); status != http.StatusForbidden {
			t.Fatalf("%s: %d %v, want 403", name, status, m)
		}
	}
	if brokerHasTopic(t, c, topic, false) {
		t.Fatal("a refused change created the topic")
	}
	if status, m := call("POST", "/api/topics", create, "Origin", base); status != http.StatusOK {
		t.Fatalf("the admin's topic creation: %d %v", status, m)
	}
	if !brokerHasTopic(t, c, topic, false) {
		t.Fatal("the admin's topic is not on the broker")
	}
}
