package acl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/remoting"
)

// TestEditsChangeWhatAnAccountMayDo: an account created over the edit API may send at once; narrowing its
// topic permissions refuses the send; deleting it refuses everything; every edit is on disk (a fresh
// Validator of the file agrees), bumps the dataVersion counter, keeps the file's mode and leaves no temporary
// file behind.
func TestEditsChangeWhatAnAccountMayDo(t *testing.T) {
	v, path, logs := newValidator(t, testFile)
	const ak, sk = "newcomer1", "newcomerSecret"
	send := func(topic string) error {
		return v.Check(local, req(remoting.SendMessageV2, map[string]string{"a": "PG", "b": topic}, "m", ak, sk))
	}
	if send("Orders") == nil {
		t.Fatal("an account not in the file may send")
	}
	if v.Version().Counter != 0 || v.Version().Timestamp == 0 {
		t.Fatalf("version of a file without dataVersion: %+v", v.Version())
	}
	if err := v.UpdateAccount(AccountEdit{AccessKey: ak, SecretKey: sk, DefaultTopicPerm: "PUB"}); err != nil {
		t.Fatal(err)
	}
	if err := send("Orders"); err != nil {
		t.Fatalf("after the account was created: %v", err)
	}
	if err := v.UpdateAccount(AccountEdit{AccessKey: ak, TopicPerms: []string{"Orders=SUB", " Audit=PUB "}}); err != nil {
		t.Fatal(err)
	}
	if err := send("Orders"); err == nil || !strings.Contains(err.Error(), "has no PUB on topic [Orders]") {
		t.Fatalf("after Orders=SUB: %v", err)
	}
	if err := send("Audit"); err != nil {
		t.Fatalf("Audit=PUB: %v", err)
	}
	// The secret was kept by the edit that did not name one; the file on disk says the same.
	fresh, err := New(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Check(local, req(remoting.SendMessageV2, map[string]string{"a": "PG", "b": "Audit"}, "m", ak, sk)); err != nil {
		t.Fatalf("the file on disk: %v", err)
	}
	if c := v.Version().Counter; c != 2 {
		t.Fatalf("counter %d after two edits", c)
	}
	if err := v.DeleteAccount(ak); err != nil {
		t.Fatal(err)
	}
	if err := send("Audit"); err == nil || !strings.Contains(err.Error(), "is not in the ACL file") {
		t.Fatalf("after the delete: %v", err)
	}
	if err := v.DeleteAccount(ak); !errors.Is(err, ErrNoAccount) || !strings.Contains(err.Error(), ak) {
		t.Fatalf("second delete: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode after edits: %v, %v", st.Mode(), err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if strings.Contains(logs.String(), sk) {
		t.Fatal("a secret reached the log")
	}
	// The other accounts came through the rewrites unchanged.
	if err := v.Check(local, req(remoting.SendMessageV2, map[string]string{"a": "PG", "b": "Secret"}, "m", "producer1")); err == nil {
		t.Fatal("producer1 lost its DENY on Secret")
	}
	if err := v.Check("192.168.5.9:1", req(remoting.SendMessageV2, map[string]string{"a": "PG", "b": "X"}, "m", "officeUser", "wrong")); err != nil {
		t.Fatalf("officeUser lost its white address: %v", err)
	}
}

// TestEditRefusals: a bad edit names the field, leaves the file's bytes as they were and the rules in force.
func TestEditRefusals(t *testing.T) {
	v, path, _ := newValidator(t, testFile)
	for _, tc := range []struct {
		name string
		e    AccountEdit
		want string
	}{
		{"new account without secret", AccountEdit{AccessKey: "someone1"}, "needs a secretKey"},
		{"short secret", AccountEdit{AccessKey: "someone1", SecretKey: "abc"}, "secretKey must be longer than 6"},
		{"short access key", AccountEdit{AccessKey: "abc", SecretKey: "longEnough"}, "accessKey must be longer than 6"},
		{"bad perm", AccountEdit{AccessKey: "reader01", DefaultTopicPerm: "WRITE"}, `defaultTopicPerm: permission "WRITE"`},
		{"bad topic perm", AccountEdit{AccessKey: "reader01", TopicPerms: []string{"a=PUBSUB"}}, `topicPerms[0]`},
		{"bad white", AccountEdit{AccessKey: "reader01", WhiteRemoteAddress: ptr("10.1.1.300")}, "whiteRemoteAddress"},
		{"no access key", AccountEdit{}, "no accessKey"},
	} {
		if err := v.UpdateAccount(tc.e); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := v.UpdateGlobalWhiteAddrs([]string{"10.0.*"}); err == nil || !strings.Contains(err.Error(), "10.0.*") {
		t.Errorf("bad global white: %v", err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != testFile || v.Version().Counter != 0 || v.Status().Accounts != 5 {
		t.Fatalf("a refused edit changed something: version %+v\n%s", v.Version(), data)
	}
}

func TestEditGlobalWhiteAndConfig(t *testing.T) {
	v, _, _ := newValidator(t, testFile)
	unsigned := req(remoting.SendMessageV2, map[string]string{"a": "PG", "b": "T"}, "m", "")
	if v.Check("10.7.0.1:1", unsigned) == nil {
		t.Fatal("10.7.0.1 is white before the edit")
	}
	if err := v.UpdateGlobalWhiteAddrs([]string{"10.7.*.*", "", " 10.8.0.1 "}); err != nil {
		t.Fatal(err)
	}
	if err := v.Check("10.7.0.1:1", unsigned); err != nil {
		t.Fatalf("white after the edit: %v", err)
	}
	if v.Check("10.9.9.1:1", unsigned) == nil {
		t.Fatal("the old white pattern survived the replacement")
	}
	c := v.Config()
	if strings.Join(c.GlobalWhiteAddrs, ",") != "10.7.*.*,10.8.0.1" || len(c.PlainAccessConfigs) != 5 {
		t.Fatalf("config %+v", c)
	}
	p := c.PlainAccessConfigs[2]
	if p.AccessKey != "producer1" || p.SecretKey != "producerSecret" || p.DefaultTopicPerm != "PUB" ||
		strings.Join(p.TopicPerms, ",") != "Secret=DENY,Audit=SUB" || strings.Join(p.GroupPerms, ",") != "Locked=DENY" {
		t.Fatalf("producer1 %+v", p)
	}
	if err := v.UpdateGlobalWhiteAddrs(nil); err != nil || len(v.Config().GlobalWhiteAddrs) != 0 {
		t.Fatalf("clearing: %v, %+v", err, v.Config())
	}
}

func ptr[T any](v T) *T { return &v }
