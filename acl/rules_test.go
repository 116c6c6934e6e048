package acl

import (
	"strings"
	"testing"
)

// sampleFile is RocketMQ 4.9's distribution conf/plain_acl.yml.
const sampleFile = `globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # the group should convert to retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    # if it is admin, it could access all resources
    admin: true
`

func TestParsePerm(t *testing.T) {
	for in, want := range map[string]Perm{"PUB": Pub, "SUB": Sub, "PUB|SUB": Pub | Sub, "SUB|PUB": Pub | Sub,
		" PUB | SUB ": Pub | Sub, "DENY": Deny, "": Deny} {
		got, err := ParsePerm(in)
		if err != nil || got != want {
			t.Errorf("ParsePerm(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"pub", "PUBSUB", "PUB|", "DENY|PUB", "READ"} {
		if _, err := ParsePerm(in); err == nil {
			t.Errorf("ParsePerm(%q) accepted", in)
		}
	}
	for _, tc := range []struct {
		owned, want Perm
		ok          bool
	}{
		{Pub, Pub, true}, {Pub, Sub, false}, {Sub, Sub, true}, {Pub | Sub, Pub, true}, {Deny, Pub, false},
		{Deny | Pub, Pub, false},
	} {
		if got := tc.owned.Allows(tc.want); got != tc.ok {
			t.Errorf("%v allows %v = %v", tc.owned, tc.want, got)
		}
	}
}

func TestParseRulesSampleFile(t *testing.T) {
	r, err := ParseRules([]byte(sampleFile))
	if err != nil {
		t.Fatal(err)
	}
	if r.Accounts() != 2 || len(r.globalWhite) != 2 || len(r.UnknownKeys) != 0 {
		t.Fatalf("rules %+v", r)
	}
	a := r.accounts["RocketMQ"]
	if a.secretKey != "12345678" || a.admin || a.defaultTopic != Deny || a.defaultGroup != Sub || a.white.match(remoteIP("10.0.0.1")) {
		t.Fatalf("account RocketMQ %+v", a)
	}
	if a.topics["topicA"] != Deny || a.topics["topicB"] != Pub|Sub || a.topics["topicC"] != Sub {
		t.Fatalf("topic perms %v", a.topics)
	}
	if a.groups["groupA"] != Deny || a.groups["groupB"] != Pub|Sub || a.groups["groupC"] != Sub {
		t.Fatalf("group perms %v", a.groups)
	}
	b := r.accounts["rocketmq2"]
	if !b.admin || b.defaultTopic != Deny || !b.white.match(remoteIP("192.168.1.77:4000")) || b.white.match(remoteIP("192.168.2.1")) {
		t.Fatalf("account rocketmq2 %+v", b)
	}
}

func TestParseRulesErrorsNameTheEntryAndHideSecrets(t *testing.T) {
	const secret = "Sup3rSecretValue"
	account := func(body string) string {
		return "accounts:\n  - accessKey: goodAccount\n    secretKey: " + secret + "\n" + body
	}
	for _, tc := range []struct{ name, file, want string }{
		{"short access key", "accounts:\n  - accessKey: abc\n    secretKey: " + secret + "\n",
			`accounts[0] (accessKey "abc"): accessKey must be longer than 6 characters`},
		{"short secret", "accounts:\n  - accessKey: goodAccount\n    secretKey: abc\n",
			"secretKey must be longer than 6 characters"},
		{"bad default perm", account("    defaultTopicPerm: WRITE\n"), `defaultTopicPerm: permission "WRITE"`},
		{"bad topic perm", account("    topicPerms: [topicA=PUBSUB]\n"), `topicPerms[0]: permission "PUBSUB"`},
		{"no equals", account("    groupPerms: [groupA]\n"), `groupPerms[0]: "groupA" is not name=PERM`},
		{"bad white address", account("    whiteRemoteAddress: 192.168.1.300\n"), `whiteRemoteAddress: address pattern "192.168.1.300"`},
		{"bad global white", "globalWhiteRemoteAddresses: [10.10.*]\n", `globalWhiteRemoteAddresses[0]: address pattern "10.10.*"`},
		{"duplicate", account("  - accessKey: goodAccount\n    secretKey: " + secret + "\n"),
			`accounts[1]: accessKey "goodAccount" is already accounts[0]`},
		{"not yaml", "accounts: [\n", "acl: yaml"},
		{"list expected", "accounts: text\n", "cannot unmarshal"},
	} {
		_, err := ParseRules([]byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows the secret: %v", tc.name, err)
		}
	}
}

func TestParseRulesUnknownKeysReported(t *testing.T) {
	r, err := ParseRules([]byte("accounts:\n  - accessKey: goodAccount\n    secretKey: goodSecret\n    topicPerm: [a=PUB]\n" +
		"dataVersion:\n  - counter: 3\n    timestamp: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.UnknownKeys) != 1 || !strings.Contains(r.UnknownKeys[0], "topicPerm") || r.Accounts() != 1 {
		t.Fatalf("unknown keys %q", r.UnknownKeys)
	}
}

func TestParseRulesEmptyFile(t *testing.T) {
	for _, f := range []string{"", "\n# nothing yet\n"} {
		r, err := ParseRules([]byte(f))
		if err != nil || r.Accounts() != 0 {
			t.Fatalf("%q: %v, %v", f, r, err)
		}
	}
}

func TestAddressPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
	}{
		{"", nil, []string{"127.0.0.1"}},
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"*.*.*.*", []string{"1.2.3.4"}, nil},
		{"192.168.0.1", []string{"192.168.0.1", "::ffff:192.168.0.1"}, []string{"192.168.0.2"}},
		{"192.168.0.1,192.168.0.7", []string{"192.168.0.7"}, []string{"192.168.0.2"}},
		{"192.168.1.{1,2,3}", []string{"192.168.1.2"}, []string{"192.168.1.4", "192.168.2.2"}},
		{"192.168.1.*", []string{"192.168.1.0", "192.168.1.255"}, []string{"192.168.2.1"}},
		{"192.168.*.*", []string{"192.168.77.3"}, []string{"192.169.0.1"}},
		{"192.168.1.10-20", []string{"192.168.1.10", "192.168.1.20"}, []string{"192.168.1.9", "192.168.1.21"}},
		{"10.1-3.*.*", []string{"10.2.9.9"}, []string{"10.4.0.0", "11.2.0.0"}},
		{"::1", []string{"0:0:0:0:0:0:0:1"}, []string{"127.0.0.1"}},
		{"1050::5:600:300c:*", []string{"1050:0:0:0:5:600:300c:326b"}, []string{"1050::5:600:300d:1"}},
		{"1050:0:0:0:5:600:300c:1-ff", []string{"1050::5:600:300c:ff"}, []string{"1050::5:600:300c:100"}},
		{"1050::5:{600,601}", []string{"1050::5:601"}, []string{"1050::5:602"}},
	} {
		p, err := parseAddrPattern(tc.pattern)
		if err != nil {
			t.Errorf("%q: %v", tc.pattern, err)
			continue
		}
		for _, a := range tc.yes {
			if !p.match(remoteIP(a)) {
				t.Errorf("%q does not match %s", tc.pattern, a)
			}
		}
		for _, a := range tc.no {
			if p.match(remoteIP(a)) {
				t.Errorf("%q matches %s", tc.pattern, a)
			}
		}
	}
	for _, bad := range []string{"192.168.1.256", "192.168.*", "192.168.1.20-10", "1.2.3.x", "192.168.1.{1,300}",
		"1:2:3:4:5:6:7:8:9-a", "a,b"} {
		if _, err := parseAddrPattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if remoteIP("[::1]:9876") != remoteIP("::1") || remoteIP("not an address").IsValid() {
		t.Fatal("remoteIP")
	}
}
