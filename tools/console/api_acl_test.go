package console

import (
	"net/http"
	"strings"
	"testing"
)

// The ACL page's API: reads and changes go through the admin account, and secret keys never reach the page.
func TestACLAPI(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src)
	callError(t, s, get("/api/acl"), http.StatusForbidden, "X-Console-Request")
	w := serve(t, s, change("GET", "/api/acl", "", accessKeyHeader, "rocketmqAdmin", secretKeyHeader, "adminSecret123"))
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "adminSecret123") || !strings.Contains(w.Body.String(), `"accessKey":"rocketmqAdmin"`) {
		t.Fatalf("acl: %d %s", w.Code, w.Body.String())
	}
	if a := src.lastAdmin(); a.creds.AccessKey != "rocketmqAdmin" {
		t.Fatalf("read signed with %q", a.creds.AccessKey)
	}

	var bb brokersBody
	call(t, s, change("POST", "/api/acl/accounts", `{"cluster":"DefaultCluster","account":{"accessKey":"pageUser","secretKey":"pageSecret1","topicPerms":["T=DENY"]}}`), http.StatusOK, &bb)
	if a := src.lastAdmin(); len(a.acl) != 1 || a.acl[0] != `update pageUser@DefaultCluster secret "pageSecret1" topics [T=DENY]` {
		t.Fatalf("update: %+v", a.acl)
	}
	callError(t, s, change("POST", "/api/acl/accounts", `{"account":{"accessKey":"pageUser"}}`), http.StatusBadRequest, "cluster is required")
	callError(t, s, change("POST", "/api/acl/accounts", `{"cluster":"C","account":{"accessKey":" "}}`), http.StatusBadRequest, "account.accessKey is required")
	call(t, s, change("DELETE", "/api/acl/accounts/pageUser?cluster=DefaultCluster", ""), http.StatusOK, &bb)
	if a := src.lastAdmin(); a.acl[0] != "delete pageUser@DefaultCluster" {
		t.Fatalf("delete: %+v", a.acl)
	}
	callError(t, s, change("DELETE", "/api/acl/accounts/pageUser", ""), http.StatusBadRequest, "parameter cluster is required")
	call(t, s, change("POST", "/api/acl/whiteaddrs", `{"cluster":"DefaultCluster","addrs":["10.1.1.*"," ",""]}`), http.StatusOK, &bb)
	if a := src.lastAdmin(); a.acl[0] != "white DefaultCluster [10.1.1.*]" {
		t.Fatalf("white addrs: %+v", a.acl)
	}
	callError(t, s, change("POST", "/api/acl/whiteaddrs", `{"addrs":[]}`), http.StatusBadRequest, "cluster is required")
}
