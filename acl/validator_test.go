package acl

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

const testFile = `globalWhiteRemoteAddresses: [10.9.9.*]
accounts:
  - accessKey: adminUser
    secretKey: adminSecret
    admin: true
  - accessKey: scopedAdmin
    secretKey: scopedSecret
    admin: true
    defaultTopicPerm: SUB
    topicPerms: [Orders=PUB|SUB]
  - accessKey: producer1
    secretKey: producerSecret
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
    topicPerms: [Secret=DENY, Audit=SUB]
    groupPerms: [Locked=DENY]
  - accessKey: reader01
    secretKey: readerSecret
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
  - accessKey: officeUser
    secretKey: officeSecret
    whiteRemoteAddress: 192.168.5.*
`

var secrets = map[string]string{"adminUser": "adminSecret", "scopedAdmin": "scopedSecret", "producer1": "producerSecret",
	"reader01": "readerSecret", "officeUser": "officeSecret"}

// logBuffer collects log output for checks, safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newValidator(t *testing.T, content string) (*Validator, string, *logBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	v, err := New(path, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	return v, path, logs
}

// req builds a request signed by account (its secret from secrets unless secret is given; "" account: unsigned).
func req(code remoting.RequestCode, ext map[string]string, body string, account string, secret ...string) *remoting.Command {
	cmd := remoting.NewRequest(code, ext, []byte(body))
	if account != "" {
		sk := secrets[account]
		if len(secret) > 0 {
			sk = secret[0]
		}
		remoting.SignRequest(cmd, account, sk)
	}
	return cmd
}

const local = "127.0.0.1:50000"

func TestCheckPermissionTable(t *testing.T) {
	v, _, _ := newValidator(t, testFile)
	send := func(topic string) map[string]string { return map[string]string{"a": "PG", "b": topic, "c": "TBW102"} }
	hb := `{"clientID":"c1","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[{"groupName":"CG",` +
		`"subscriptionDataSet":[{"topic":"Orders"},{"topic":"%RETRY%CG"}]}]}`
	for _, tc := range []struct {
		name   string
		cmd    *remoting.Command
		remote string
		remark string // "" = allowed
	}{
		{"producer sends", req(remoting.SendMessageV2, send("Orders"), "m", "producer1"), local, ""},
		{"producer v1 send", req(remoting.SendMessage, map[string]string{"topic": "Orders", "producerGroup": "PG"}, "m", "producer1"), local, ""},
		{"producer batch to a denied topic", req(remoting.SendBatchMessage, send("Secret"), "m", "producer1"), local,
			"No permission: account [producer1] has no PUB on topic [Secret]"},
		{"producer sends to a SUB-only topic", req(remoting.SendMessageV2, send("Audit"), "m", "producer1"), local,
			"No permission: account [producer1] has no PUB on topic [Audit]"},
		{"reader cannot send", req(remoting.SendMessageV2, send("Orders"), "m", "reader01"), local,
			"No permission: account [reader01] has no PUB on topic [Orders]"},
		{"producer recalls", req(remoting.RecallMessage, map[string]string{"topic": "Orders", "recallHandle": "h"}, "m", "producer1"), local, ""},
		{"reader cannot recall", req(remoting.RecallMessage, map[string]string{"topic": "Orders", "recallHandle": "h"}, "m", "reader01"), local,
			"No permission: account [reader01] has no PUB on topic [Orders]"},
		{"reader cannot reply", req(remoting.SendReplyMessageV2, send("Orders"), "m", "reader01"), local,
			"No permission: account [reader01] has no PUB on topic [Orders]"},
		{"send to a retry topic needs SUB on its group", req(remoting.SendMessageV2, send("%RETRY%Locked"), "m", "producer1"), local,
			"No permission: account [producer1] has no SUB on group [Locked]"},
		{"reader pulls", req(remoting.PullMessage, map[string]string{"topic": "Orders", "consumerGroup": "CG"}, "", "reader01"), local, ""},
		{"producer cannot pull a group it is denied", req(remoting.PullMessage, map[string]string{"topic": "Audit", "consumerGroup": "Locked"}, "", "producer1"), local,
			"No permission: account [producer1] has no SUB on group [Locked]"},
		{"producer pulls a PUB-only topic", req(remoting.PullMessage, map[string]string{"topic": "Orders", "consumerGroup": "CG"}, "", "producer1"), local,
			"No permission: account [producer1] has no SUB on topic [Orders]"},
		{"reader pops", req(remoting.PopMessage, map[string]string{"topic": "Orders", "consumerGroup": "CG"}, "", "reader01"), local, ""},
		{"producer pops a PUB-only topic", req(remoting.PopMessage, map[string]string{"topic": "Orders", "consumerGroup": "CG"}, "", "producer1"), local,
			"No permission: account [producer1] has no SUB on topic [Orders]"},
		{"reader acks a redelivered message", req(remoting.AckMessage, map[string]string{"topic": "%RETRY%CG_Orders", "consumerGroup": "CG"}, "", "reader01"), local, ""},
		{"producer acks a redelivered message", req(remoting.AckMessage, map[string]string{"topic": "%RETRY%CG_Orders", "consumerGroup": "CG"}, "", "producer1"), local,
			"No permission: account [producer1] has no SUB on topic [Orders]"},
		{"reader batch acks", req(remoting.BatchAckMessage, nil, `{"acks":[{"c":"CG","t":"Orders","r":"1"}]}`, "reader01"), local, ""},
		{"producer batch acks a denied group", req(remoting.BatchAckMessage, nil, `{"acks":[{"c":"Locked","t":"Audit"}]}`, "producer1"), local,
			"No permission: account [producer1] has no SUB on group [Locked]"},
		{"reader heartbeat", req(remoting.HeartBeat, nil, hb, "reader01"), local, ""},
		{"producer heartbeat subscribing", req(remoting.HeartBeat, nil, hb, "producer1"), local,
			"No permission: account [producer1] has no SUB on topic [Orders]"},
		{"bad heartbeat body", req(remoting.HeartBeat, nil, "{", "reader01"), local, "heartbeat body does not decode"},
		{"offset update", req(remoting.UpdateConsumerOffset, map[string]string{"topic": "Orders", "consumerGroup": "Locked", "queueId": "1"}, "", "reader01"), local, ""},
		{"send back", req(remoting.ConsumerSendMsgBack, map[string]string{"group": "Locked", "offset": "1"}, "", "producer1"), local,
			"No permission: account [producer1] has no SUB on group [Locked]"},
		{"unregister", req(remoting.UnregisterClient, map[string]string{"clientID": "c", "consumerGroup": "CG"}, "", "reader01"), local, ""},
		{"consumer list", req(remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "Locked"}, "", "producer1"), local,
			"has no SUB on group [Locked]"},
		{"query message", req(remoting.QueryMessage, map[string]string{"topic": "Orders", "key": "k"}, "", "producer1"), local,
			"has no SUB on topic [Orders]"},
		{"no perm needed, signed", req(remoting.GetMaxOffset, map[string]string{"topic": "Secret", "queueId": "0"}, "", "producer1"), local, ""},
		{"trace topic always writable", req(remoting.SendMessageV2, send("RMQ_SYS_TRACE_TOPIC"), "t", "reader01"), local, ""},
		{"admin creates a topic", req(remoting.UpdateAndCreateTopic, map[string]string{"topic": "New"}, "", "adminUser"), local, ""},
		{"admin sends anywhere", req(remoting.SendMessageV2, send("Secret"), "m", "adminUser"), local, ""},
		{"non-admin creates a topic", req(remoting.UpdateAndCreateTopic, map[string]string{"topic": "New"}, "", "producer1"), local,
			"No permission: account [producer1] is not admin; UPDATE_AND_CREATE_TOPIC needs an admin account"},
		{"non-admin updates broker config", req(remoting.UpdateBrokerConfig, nil, "brokerPermission=4", "reader01"), local,
			"account [reader01] is not admin; UPDATE_BROKER_CONFIG"},
		{"non-admin deletes a group", req(remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "G"}, "", "reader01"), local, "is not admin"},
		{"scoped admin is checked per topic", req(remoting.SendMessageV2, send("Other"), "m", "scopedAdmin"), local,
			"No permission: account [scopedAdmin] has no PUB on topic [Other]"},
		{"scoped admin on its topic", req(remoting.SendMessageV2, send("Orders"), "m", "scopedAdmin"), local, ""},
		{"no credentials", req(remoting.SendMessageV2, send("Orders"), "m", ""), local,
			"No permission: the request (SEND_MESSAGE_V2) carries no AccessKey; ACL is enabled (aclEnable=true)"},
		{"unknown account", req(remoting.SendMessageV2, send("Orders"), "m", "stranger", "strangerSecret"), local,
			"No permission: account [stranger] is not in the ACL file"},
		{"wrong secret", req(remoting.SendMessageV2, send("Orders"), "m", "producer1", "guessedSecret"), local,
			"No permission: signature check failed for account [producer1]"},
		{"global white address, unsigned", req(remoting.UpdateAndCreateTopic, map[string]string{"topic": "X"}, "", ""), "10.9.9.4:1234", ""},
		{"account white address, bad signature", req(remoting.SendMessageV2, send("Orders"), "m", "officeUser", "wrongSecret"), "192.168.5.20:1", ""},
		{"account white address from elsewhere", req(remoting.SendMessageV2, send("Orders"), "m", "officeUser", "wrongSecret"), "192.168.6.20:1",
			"signature check failed for account [officeUser]"},
	} {
		err := v.Check(tc.remote, tc.cmd)
		switch {
		case tc.remark == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.remark != "" && (err == nil || !strings.Contains(err.Error(), tc.remark)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.remark)
		}
		var d *DeniedError
		if err != nil && (!errors.As(err, &d) || d.Code != remoting.RequestCode(tc.cmd.Code)) {
			t.Errorf("%s: error %T %v", tc.name, err, err)
		}
	}
	// A request changed after signing fails its signature.
	cmd := req(remoting.SendMessageV2, send("Orders"), "m", "producer1")
	cmd.Body = []byte("tampered")
	if err := v.Check(local, cmd); err == nil || !strings.Contains(err.Error(), "signature check failed") {
		t.Fatalf("tampered body: %v", err)
	}
	cmd = req(remoting.SendMessageV2, send("Orders"), "m", "producer1")
	delete(cmd.ExtFields, remoting.ExtSignature)
	if err := v.Check(local, cmd); err == nil || !strings.Contains(err.Error(), "carries no Signature") {
		t.Fatalf("no signature: %v", err)
	}
}

func TestInterceptAnswersNoPermissionAndLogsNoSecret(t *testing.T) {
	v, _, logs := newValidator(t, testFile)
	pool := remoting.NewPool("p", 1, 8)
	srv := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0"}, nil)
	srv.Register(remoting.SendMessageV2, pool, func(_ context.Context, _ *remoting.Conn, _ *remoting.Command) *remoting.Command {
		return remoting.NewResponse(remoting.Success, "stored")
	})
	srv.AddGuard("acl", v.Intercept)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, tc := range []struct {
		creds remoting.Credentials
		code  remoting.ResponseCode
	}{
		{remoting.Credentials{AccessKey: "producer1", SecretKey: "producerSecret"}, remoting.Success},
		{remoting.Credentials{AccessKey: "reader01", SecretKey: "readerSecret"}, remoting.NoPermission},
		{remoting.Credentials{AccessKey: "producer1", SecretKey: "notTheSecret"}, remoting.NoPermission},
		{remoting.Credentials{}, remoting.NoPermission},
	} {
		cl := remoting.NewClient(remoting.ClientConfig{Credentials: tc.creds}, nil)
		resp, err := cl.Invoke(ctxT(t), srv.Addr().String(), remoting.NewRequest(remoting.SendMessageV2,
			map[string]string{"a": "PG", "b": "Orders"}, []byte("m")))
		_ = cl.Close()
		if err != nil || resp.Code != int32(tc.code) {
			t.Fatalf("%s: %v %v, want %s", tc.creds.AccessKey, resp, err, tc.code)
		}
	}
	out := logs.String()
	if !strings.Contains(out, "acl: request refused") || !strings.Contains(out, "account=reader01") {
		t.Fatalf("refusals not logged:\n%s", out)
	}
	for _, s := range append(mapsValues(secrets), "notTheSecret") {
		if strings.Contains(out, s) {
			t.Fatalf("a secret reached the log:\n%s", out)
		}
	}
}

func mapsValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestNewRefusesMissingOrBadFile(t *testing.T) {
	if _, err := New(filepath.Join(t.TempDir(), "missing.yml"), nil); err == nil || !strings.Contains(err.Error(), "missing.yml") {
		t.Fatalf("missing file: %v", err)
	}
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	_ = os.WriteFile(path, []byte("accounts:\n  - accessKey: abc\n    secretKey: 12345678\n"), 0o600)
	if _, err := New(path, nil); err == nil || !strings.Contains(err.Error(), "accounts[0]") || !strings.Contains(err.Error(), path) {
		t.Fatalf("bad file: %v", err)
	}
}

// replaceFile writes content to a temporary file and renames it over path, as the docs ask operators to.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func waitStatus(t *testing.T, v *Validator, what string, cond func(Status) bool) Status {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := v.Status()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; status %+v", what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReloadOnChangeKeepsOldRulesOnBadFile(t *testing.T) {
	v, path, logs := newValidator(t, testFile)
	if err := v.Start(); err != nil {
		t.Fatal(err)
	}
	send := func(account string) error {
		return v.Check(local, req(remoting.SendMessageV2, map[string]string{"a": "PG", "b": "Orders"}, "m", account))
	}
	if send("reader01") == nil {
		t.Fatal("reader01 may send before the change")
	}

	// reader01 gets PUB: the new file is in force without a restart.
	replaceFile(t, path, strings.Replace(testFile, "    defaultTopicPerm: SUB\n    defaultGroupPerm: SUB\n",
		"    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: SUB\n", 1))
	waitStatus(t, v, "the second load", func(s Status) bool { return s.Loads == 2 })
	if err := send("reader01"); err != nil {
		t.Fatalf("after the reload: %v", err)
	}

	// A broken file is refused and the rules before it stay.
	replaceFile(t, path, "accounts:\n  - accessKey: reader01\n    secretKey: short\n")
	st := waitStatus(t, v, "the refusal", func(s Status) bool { return s.Failures == 1 })
	if !strings.Contains(st.LastError, "secretKey must be longer") || st.Accounts != 5 || st.Loads != 2 {
		t.Fatalf("status %+v", st)
	}
	if err := send("reader01"); err != nil {
		t.Fatalf("old rules not kept: %v", err)
	}
	if !strings.Contains(logs.String(), "the rules loaded before stay in force") {
		t.Fatal("the refusal was not logged")
	}

	// Removing the file keeps the rules too; putting a good one back loads it.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, testFile)
	waitStatus(t, v, "the third load", func(s Status) bool { return s.Loads == 3 && s.LastError == "" })
	if send("reader01") == nil {
		t.Fatal("reader01 may still send")
	}
	if strings.Contains(logs.String(), "readerSecret") {
		t.Fatal("a secret reached the log")
	}
}

func TestReloadSkipsUnchangedContent(t *testing.T) {
	v, path, _ := newValidator(t, testFile)
	replaceFile(t, path, testFile)
	if err := v.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := v.Status(); st.Loads != 1 {
		t.Fatalf("identical file loaded again: %+v", st)
	}
	if err := v.Close(); err != nil { // without Start
		t.Fatal(err)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestLogin(t *testing.T) {
	v, _, _ := newValidator(t, testFile)
	p, err := v.Login("adminUser", "adminSecret")
	if err != nil || !p.Admin || p.AccessKey != "adminUser" {
		t.Fatalf("admin login: %+v %v", p, err)
	}
	for _, c := range [][2]string{{"adminUser", "adminSecret1"}, {"adminUser", ""}, {"nobody", "adminSecret"}, {"", ""}} {
		if _, err := v.Login(c[0], c[1]); !errors.Is(err, ErrLogin) {
			t.Errorf("login %q/%q: %v, want ErrLogin", c[0], c[1], err)
		}
	}
}
