package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func newTestServer(t *testing.T, src Source) *Server {
	t.Helper()
	s, err := New(Config{Listen: "127.0.0.1:0", Source: src, SampleInterval: time.Second, History: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// request is one API call: a method, a path, an optional JSON body and headers.
type request struct {
	method, path, body string
	header             map[string]string
}

// change is a request as the pages send changes: with the request header and a JSON body.
func change(method, path, body string, header ...string) request {
	h := map[string]string{requestHeader: "1", "Content-Type": "application/json"}
	for i := 0; i+1 < len(header); i += 2 {
		h[header[i]] = header[i+1]
	}
	return request{method: method, path: path, body: body, header: h}
}

func get(path string) request { return request{method: http.MethodGet, path: path} }

func serve(t *testing.T, s *Server, req request) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(req.method, req.path, strings.NewReader(req.body))
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, r)
	return w
}

// call serves req, wants status, and decodes the JSON answer into out (when not nil).
func call(t *testing.T, s *Server, req request, status int, out any) {
	t.Helper()
	w := serve(t, s, req)
	if w.Code != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", req.method, req.path, w.Code, status, w.Body.String())
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q", req.method, req.path, ct)
	}
	if out != nil {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			t.Fatalf("%s %s: %v in %s", req.method, req.path, err, w.Body.String())
		}
	}
}

// callError serves req, wants status and an error body that says every want.
func callError(t *testing.T, s *Server, req request, status int, wants ...string) errorBody {
	t.Helper()
	var e errorBody
	call(t, s, req, status, &e)
	for _, want := range wants {
		if !strings.Contains(e.Error, want) {
			t.Fatalf("%s %s: error %q does not say %q", req.method, req.path, e.Error, want)
		}
	}
	return e
}

func TestClusterAPI(t *testing.T) {
	src := newFakeSource()
	src.brokers = append(src.brokers, Broker{Cluster: "Other", BrokerName: "broker-r", Addr: "10.0.0.9:10911",
		Raft: &RaftNode{Group: "RaftGroup", SelfID: "n0", Role: "LEADER", Term: 7, Leader: "10.0.0.9:10911"}},
		Broker{Cluster: "Other", BrokerName: "broker-x", Addr: "10.0.0.8:10911", Error: "dial: refused", ACL: true})
	s := newTestServer(t, src)
	var c clusterBody
	call(t, s, get("/api/cluster"), http.StatusOK, &c)
	if len(c.Brokers) != 4 || strings.Join(c.Clusters, ",") != "DefaultCluster,Other" || !c.Raft || !c.ACL {
		t.Fatalf("cluster: %+v", c)
	}
	if r := c.Brokers[2].Raft; r == nil || r.Term != 7 || r.Leader != "10.0.0.9:10911" || r.Role != "LEADER" {
		t.Fatalf("raft node: %+v", r)
	}
	// Without Raft nodes the page is told not to show the Raft columns.
	src2 := newFakeSource()
	call(t, newTestServer(t, src2), get("/api/cluster"), http.StatusOK, &c)
	if c.Raft || c.ACL || c.Brokers[0].Raft != nil {
		t.Fatalf("cluster without Raft: %+v", c)
	}
	// A page that refreshes within two intervals is answered from the last answer.
	s2 := newTestServer(t, src2)
	call(t, s2, get("/api/cluster"), http.StatusOK, &c)
	call(t, s2, get("/api/cluster"), http.StatusOK, &c)
	if n := src2.count("Brokers"); n != 2 { // one for the first server, one for s2
		t.Fatalf("Brokers called %d times, want 2", n)
	}
	var cfg configBody
	call(t, s, get("/api/config"), http.StatusOK, &cfg)
	if cfg.SampleIntervalMs != 1000 || cfg.HistoryMs != 60_000 {
		t.Fatalf("config: %+v", cfg)
	}
}

func TestTopicsAPI(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src)
	var tb topicsBody
	call(t, s, get("/api/topics"), http.StatusOK, &tb)
	kinds := map[string]string{}
	for _, r := range tb.Topics {
		kinds[r.Name] = r.Kind
	}
	want := map[string]string{"Orders": kindNormal, "%RETRY%G1": kindRetry, "%DLQ%G1": kindDLQ, "TBW102": kindSystem,
		"DefaultCluster": kindSystem, "broker-a": kindSystem, "RMQ_SYS_TRACE_TOPIC": kindSystem, "DefaultCluster_REPLY_TOPIC": kindSystem}
	for n, k := range want {
		if kinds[n] != k {
			t.Errorf("topic %s: kind %q, want %q", n, kinds[n], k)
		}
	}
	var topic Topic
	call(t, s, get("/api/topics/Orders"), http.StatusOK, &topic)
	if len(topic.Queues) != 2 || topic.Brokers[0].Addrs[0] != "127.0.0.1:10911" || topic.Groups[0] != "G1" {
		t.Fatalf("topic: %+v", topic)
	}
	callError(t, s, get("/api/topics/Nope"), http.StatusNotFound, "topic Nope does not exist")
	// Names with % travel escaped in the path.
	src.topic["%RETRY%G1"] = &Topic{Name: "%RETRY%G1"}
	call(t, s, get("/api/topics/%25RETRY%25G1"), http.StatusOK, &topic)
	if topic.Name != "%RETRY%G1" {
		t.Fatalf("retry topic: %+v", topic)
	}
	callError(t, s, get("/api/nothing"), http.StatusNotFound, "no API GET /api/nothing")
}

func TestCreateTopic(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src)
	ok := `{"topic":"New","cluster":"DefaultCluster"}`
	var b brokersBody
	call(t, s, change("POST", "/api/topics", ok), http.StatusOK, &b)
	a := src.lastAdmin()
	if len(b.Brokers) != 1 || a == nil || len(a.specs) != 1 || !a.closed || a.creds.AccessKey != "" {
		t.Fatalf("create: %+v, admin %+v", b, a)
	}
	if sp := a.specs[0]; sp != (TopicSpec{Topic: "New", Cluster: "DefaultCluster", ReadQueues: 8, WriteQueues: 8, Perm: 6}) {
		t.Fatalf("defaults: %+v", sp)
	}
	for _, c := range []struct {
		name, body, want string
	}{
		{"bad name", `{"topic":"a b","cluster":"C"}`, `topic "a b"`},
		{"long name", `{"topic":"` + strings.Repeat("x", 128) + `","cluster":"C"}`, "127"},
		{"system topic", `{"topic":"TBW102","cluster":"C"}`, "system topic"},
		{"no target", `{"topic":"T"}`, "one of cluster or brokerAddr"},
		{"two targets", `{"topic":"T","cluster":"C","brokerAddr":"h:1"}`, "one of cluster or brokerAddr"},
		{"read queues", `{"topic":"T","cluster":"C","readQueues":2000}`, "readQueues 2000"},
		{"write queues", `{"topic":"T","cluster":"C","writeQueues":-1}`, "writeQueues -1"},
		{"perm", `{"topic":"T","cluster":"C","perm":5}`, "perm 5"},
		{"unknown field", `{"topic":"T","cluster":"C","queues":2}`, `unknown field "queues"`},
		{"not JSON", `topic=T`, "request body"},
	} {
		t.Run(c.name, func(t *testing.T) {
			callError(t, s, change("POST", "/api/topics", c.body), http.StatusBadRequest, c.want)
		})
	}
	// Changes need the request header (a form of another site cannot send it) and a JSON body.
	callError(t, s, request{method: "POST", path: "/api/topics", body: ok, header: map[string]string{"Content-Type": "application/json"}},
		http.StatusForbidden, requestHeader)
	callError(t, s, request{method: "POST", path: "/api/topics", body: ok, header: map[string]string{requestHeader: "1", "Content-Type": "text/plain"}},
		http.StatusUnsupportedMediaType, "application/json")
	// An account comes whole.
	callError(t, s, change("POST", "/api/topics", ok, secretKeyHeader, "s"), http.StatusBadRequest, accessKeyHeader)
	callError(t, s, change("POST", "/api/topics", ok, accessKeyHeader, "k"), http.StatusBadRequest, secretKeyHeader)
}

func TestChangesUnderACL(t *testing.T) {
	src := newFakeSource()
	src.brokers[0].ACL = true
	s := newTestServer(t, src)
	body := `{"topic":"New","cluster":"DefaultCluster"}`
	e := callError(t, s, change("POST", "/api/topics", body), http.StatusUnauthorized, "ACL is on", "admin account")
	if !e.NeedAccount {
		t.Fatalf("401 without needAccount: %+v", e)
	}
	callError(t, s, change("DELETE", "/api/topics/Orders?cluster=DefaultCluster", ""), http.StatusUnauthorized, "admin account")
	callError(t, s, change("POST", "/api/groups/G1/reset", `{"topic":"Orders","timestamp":0}`), http.StatusUnauthorized, "admin account")
	if len(src.admins) != 0 {
		t.Fatalf("changes without an account reached the source: %d", len(src.admins))
	}
	// With the person's account the change is signed with it; the brokers judge whether it is an admin.
	call(t, s, change("POST", "/api/topics", body, accessKeyHeader, "rocketmqAdmin", secretKeyHeader, "adminSecret123"), http.StatusOK, nil)
	a := src.lastAdmin()
	if a.creds.AccessKey != "rocketmqAdmin" || string(a.creds.SecretKey) != "adminSecret123" || !a.closed {
		t.Fatalf("admin creds: %+v", a)
	}
}

func TestDeniedAndFailedChanges(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src)
	h := s.admin(func(r *http.Request, adm Admin) (any, error) {
		return nil, fmt.Errorf("UPDATE_AND_CREATE_TOPIC to 127.0.0.1:10911: NO_PERMISSION (16) account [reader] is not admin: %w", ErrDenied)
	})
	r := httptest.NewRequest("POST", "/api/topics", strings.NewReader(`{}`))
	r.Header.Set(requestHeader, "1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "is not admin") {
		t.Fatalf("denied change: %d %s", w.Code, w.Body.String())
	}
}

func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{badRequest("x"), 400},
		{fmt.Errorf("a: %w", ErrNotFound), 404},
		{fmt.Errorf("a: %w", ErrDenied), 403},
		{fmt.Errorf("a: %w", ErrInvalid), 400},
		{fmt.Errorf("a: %w", context.DeadlineExceeded), 504},
		{errors.New("dial tcp: connection refused"), 502},
	} {
		if got := statusOf(c.err); got != c.want {
			t.Errorf("statusOf(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestDeleteAndReset(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src)
	callError(t, s, change("DELETE", "/api/topics/Orders", ""), http.StatusBadRequest, "parameter cluster is required")
	var b brokersBody
	call(t, s, change("DELETE", "/api/topics/Orders?cluster=DefaultCluster", ""), http.StatusOK, &b)
	if a := src.lastAdmin(); len(a.deleted) != 1 || a.deleted[0] != "Orders@DefaultCluster" {
		t.Fatalf("delete: %+v", a)
	}
	callError(t, s, change("POST", "/api/groups/G1/reset", `{"timestamp":0}`), http.StatusBadRequest, "topic is required")
	callError(t, s, change("POST", "/api/groups/G1/reset", `{"topic":"Orders","timestamp":-2}`), http.StatusBadRequest, "timestamp -2")
	var rb resetBody
	call(t, s, change("POST", "/api/groups/G1/reset", `{"topic":"Orders","timestamp":-1}`), http.StatusOK, &rb)
	if a := src.lastAdmin(); len(a.resets) != 1 || a.resets[0] != "G1 Orders -1" || len(rb.Queues) != 1 || rb.Queues[0].Offset != 3 {
		t.Fatalf("reset: %+v %+v", a, rb)
	}
	// No other method reaches the handlers.
	callError(t, s, request{method: "PUT", path: "/api/topics/Orders"}, http.StatusNotFound, "no API PUT /api/topics/Orders")
	if w := serve(t, s, request{method: "POST", path: "/app.js"}); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST of a page: %d", w.Code)
	}
}

func TestGroupsAndProducersAPI(t *testing.T) {
	src := newFakeSource()
	src.conns = []Connection{{ClientID: "10.0.0.1@p1", ClientAddr: "10.0.0.1:5000", Language: "GO", Version: "V4_9_4"}}
	s := newTestServer(t, src)
	var gb groupsBody
	call(t, s, get("/api/groups"), http.StatusOK, &gb)
	if len(gb.Groups) != 1 || gb.Groups[0].Lag != 4 {
		t.Fatalf("groups: %+v", gb)
	}
	var g Group
	call(t, s, get("/api/groups/Offline"), http.StatusOK, &g)
	if g.Online || g.Lag != 9 {
		t.Fatalf("group: %+v", g)
	}
	callError(t, s, get("/api/groups/Nope"), http.StatusNotFound, "group Nope")
	callError(t, s, get("/api/producers?topic=Orders"), http.StatusBadRequest, "parameter group is required")
	callError(t, s, get("/api/producers?group=PG"), http.StatusBadRequest, "parameter topic is required")
	var pb producersBody
	call(t, s, get("/api/producers?group=PG&topic=Orders"), http.StatusOK, &pb)
	if len(pb.Connections) != 1 || src.count("Producers PG Orders") != 1 {
		t.Fatalf("producers: %+v", pb)
	}
	src.set(func(f *fakeSource) { f.err = errors.New("dial tcp 127.0.0.1:9876: connection refused") })
	callError(t, s, get("/api/groups/G1"), http.StatusBadGateway, "connection refused")
}

func TestMessagesAPI(t *testing.T) {
	src := newFakeSource()
	off := int64(8)
	src.messages = []Message{{MsgID: "U1", OffsetMsgID: "O1", Topic: "Orders", Keys: "k1", QueueOffset: 5,
		Body: []byte(strings.Repeat("é", 100)), Properties: map[string]string{"KEYS": "k1"},
		Trace: []Delivery{{Group: "G1", State: "CONSUMED", ConsumerOffset: &off}}}}
	s := newTestServer(t, src)
	var mb messagesBody
	call(t, s, get("/api/messages?topic=Orders&key=k1"), http.StatusOK, &mb)
	if len(mb.Messages) != 1 || mb.Messages[0].BodySize != 200 || len(mb.Messages[0].Preview) != previewBytes ||
		src.count("MessagesByKey Orders k1 64") != 1 {
		t.Fatalf("by key: %+v", mb)
	}
	call(t, s, get("/api/messages?topic=Orders&begin=1000&end=2000&max=5"), http.StatusOK, &mb)
	if src.count("MessagesByTime Orders 1000 2000 5") != 1 {
		t.Fatalf("by time: calls %v", src.calls)
	}
	for _, c := range []struct{ query, want string }{
		{"key=k", "parameter topic is required"},
		{"topic=T", "give parameter key, or begin and end"},
		{"topic=T&begin=2000&end=1000", "begin (2000) must be before end (1000)"},
		{"topic=T&begin=x", `parameter begin="x"`},
		{"topic=T&key=k&max=0", `parameter max="0"`},
		{"topic=T&begin=1&end=2&max=5000", `parameter max="5000"`},
	} {
		callError(t, s, get("/api/messages?"+c.query), http.StatusBadRequest, c.want)
	}
	var m Message
	call(t, s, get("/api/messages/O1?topic=Orders"), http.StatusOK, &m)
	if m.MsgID != "U1" || len(m.Trace) != 1 || *m.Trace[0].ConsumerOffset != 8 || string(m.Body) != strings.Repeat("é", 100) {
		t.Fatalf("message: %+v", m)
	}
	callError(t, s, get("/api/messages/NOPE"), http.StatusNotFound, "message NOPE")
}

func TestAssets(t *testing.T) {
	s := newTestServer(t, newFakeSource())
	w := serve(t, s, get("/"))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `<script type="module" src="app.js">`) {
		t.Fatalf("index: %d %s", w.Code, w.Body.String())
	}
	if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("CSP %q", csp)
	}
	if w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("no nosniff")
	}
	// Every module the pages import is served as JavaScript, and none reaches outside the console.
	entries, err := assetsFS.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "index.html" {
			continue // served as /
		}
		w := serve(t, s, get("/"+e.Name()))
		if w.Code != 200 {
			t.Fatalf("%s: %d", e.Name(), w.Code)
		}
		text := w.Body.String()
		if other := strings.ReplaceAll(text, "http://www.w3.org/2000/svg", ""); strings.Contains(other, "http://") || strings.Contains(other, "https://") {
			t.Errorf("%s refers to another site", e.Name())
		}
		if strings.Contains(text, "innerHTML") || strings.Contains(text, "outerHTML") || strings.Contains(text, "insertAdjacentHTML") {
			t.Errorf("%s writes HTML from strings; build nodes with el() so data stays text", e.Name())
		}
		if !strings.HasSuffix(e.Name(), ".js") {
			continue
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
			t.Errorf("%s: Content-Type %q", e.Name(), ct)
		}
		for _, line := range strings.Split(text, "\n") {
			if i := strings.Index(line, "from './"); i >= 0 && strings.HasPrefix(line, "import") {
				mod := strings.TrimSuffix(strings.TrimSuffix(line[i+len("from './"):], ";"), "'")
				if _, err := assetsFS.Open("assets/" + mod); err != nil {
					t.Errorf("%s imports %s, which is not embedded", e.Name(), mod)
				}
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Listen: "127.0.0.1:0", Source: newFakeSource(), SampleInterval: time.Second, History: time.Minute}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Listen = "8080" }, "--listen"},
		{func(c *Config) { c.SampleInterval = 0 }, "--sampleInterval"},
		{func(c *Config) { c.History = time.Millisecond }, "--history"},
		{func(c *Config) { c.SampleInterval, c.History = time.Millisecond, time.Hour }, "--history"},
		{func(c *Config) { c.Source = nil }, "Source"},
	} {
		cfg := ok
		c.edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate() = %v, want it to name %s", err, c.want)
		}
	}
}
