package admin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
)

const aclTestFile = `accounts:
  - accessKey: adminUser
    secretKey: adminSecret
    admin: true
  - accessKey: plainUser
    secretKey: plainSecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`

// startACLCluster starts one broker with aclEnable on the file above; it returns the cluster, the file and a
// tools.yml of the admin account.
func startACLCluster(t *testing.T) (*cluster.Cluster, string, string) {
	t.Helper()
	dir := t.TempDir()
	aclPath := filepath.Join(dir, "plain_acl.yml")
	if err := os.WriteFile(aclPath, []byte(aclTestFile), 0o600); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(dir, "tools.yml")
	if err := os.WriteFile(tools, []byte("accessKey: adminUser\nsecretKey: adminSecret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := cluster.Start(t, cluster.Options{Configure: func(_ int, cfg *broker.Config) {
		cfg.ACL.AclEnable, cfg.ACL.AclFile = true, aclPath
	}})
	return c, aclPath, tools
}

// signedSend sends one message to queue 0 of topic at the broker at addr, signed as ak/sk ("" unsigned).
func signedSend(t *testing.T, c *cluster.Cluster, addr, topic, ak, sk string) error {
	t.Helper()
	cl := client.New(client.Config{Namesrvs: c.NamesrvAddrs(), Timeout: 5 * time.Second,
		Credentials: remoting.Credentials{AccessKey: ak, SecretKey: remoting.Secret(sk)}, Log: cluster.TestLogger(t, 0)})
	defer cl.Close()
	props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: client.NewUniqID()})
	_, err := cl.SendMessage(context.Background(), addr, &client.Send{Group: "PG_acl", Topic: topic,
		BrokerName: "broker-a", QueueID: 0, Properties: props, Body: []byte("hello")})
	return err
}

// officialSend sends one message with a new official Go producer signing as ak/sk.
func officialSend(t *testing.T, c *cluster.Cluster, topic, ak, sk string) error {
	t.Helper()
	p, err := rocketmq.NewProducer(producer.WithNsResolver(primitive.NewPassthroughResolver(c.NamesrvAddrs())),
		producer.WithGroupName("PG_acl_official"), producer.WithInstanceName(instance("acl")), producer.WithRetry(0),
		producer.WithCredentials(primitive.Credentials{AccessKey: ak, SecretKey: sk}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Shutdown() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("official")))
	if err == nil && res.Status != primitive.SendOK {
		err = fmt.Errorf("send status %v", res.Status)
	}
	return err
}

// TestACLCommands: the ACL commands change what a signed client may do. A send signed by an account the file
// does not have is refused; after updateAclConfig it is stored; narrowing the account's topicPerms refuses it
// again; after deleteAclConfig the account is unknown; updateGlobalWhiteAddr lets an unsigned send through and
// clearing it stops it. getAclConfig and clusterAclConfigVersion show the file and its version counter; a
// non-admin account may not edit.
func TestACLCommands(t *testing.T) {
	c, aclPath, tools := startACLCluster(t)
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	const topic, ak, sk = "TopicACL", "newcomer1", "newcomerSecret"
	ok(t, "updateTopic", "-n", ns, "-b", addr, "-t", topic, "--toolsConfig", tools)
	c.WaitTopicRoute(topic)

	err := signedSend(t, c, addr, topic, ak, sk)
	if !client.HasCode(err, remoting.NoPermission) || !strings.Contains(err.Error(), "is not in the ACL file") {
		t.Fatalf("send of an unknown account: %v", err)
	}

	out := ok(t, "updateAclConfig", "-n", ns, "-b", addr, "-a", ak, "-s", sk, "-i", "PUB", "-u", "SUB",
		"--toolsConfig", tools)
	contains(t, out, "create or update plain access config to "+addr+" success.",
		"PlainAccessConfig{accessKey='newcomer1', whiteRemoteAddress=null, admin=false, defaultTopicPerm='PUB'")
	if strings.Contains(out, sk) {
		t.Fatalf("updateAclConfig printed the secret:\n%s", out)
	}
	if err := signedSend(t, c, addr, topic, ak, sk); err != nil {
		t.Fatalf("send after updateAclConfig: %v", err)
	}
	if err := officialSend(t, c, topic, ak, sk); err != nil {
		t.Fatalf("the official Go client's signed send after updateAclConfig: %v", err)
	}
	data, _ := os.ReadFile(aclPath)
	contains(t, string(data), "accessKey: newcomer1", "defaultTopicPerm: PUB", "accessKey: plainUser", "dataVersion:")

	ok(t, "updateAclConfig", "-n", ns, "-c", "DefaultCluster", "-a", ak, "-t", topic+"=SUB,Other=PUB", "--toolsConfig", tools)
	err = signedSend(t, c, addr, topic, ak, sk)
	if !client.HasCode(err, remoting.NoPermission) || !strings.Contains(err.Error(), "has no PUB on topic [TopicACL]") {
		t.Fatalf("send after topicPerms %s=SUB: %v", topic, err)
	}

	out = ok(t, "getAclConfig", "-n", ns, "-b", addr, "--toolsConfig", tools)
	contains(t, out, "globalWhiteRemoteAddresses: []", "accounts:", "  accessKey         : newcomer1",
		"  topicPerms        : [TopicACL=SUB, Other=PUB]", "  admin             : true")
	var cfg aclConfigResult
	okJSON(t, &cfg, "getAclConfig", "-n", ns, "-c", "DefaultCluster", "--toolsConfig", tools)
	if len(cfg.Brokers) != 1 || len(cfg.Brokers[0].Config.PlainAccessConfigs) != 3 ||
		cfg.Brokers[0].Config.PlainAccessConfigs[2].SecretKey != sk {
		t.Fatalf("getAclConfig --json: %+v", cfg)
	}

	var ver aclVersionResult
	okJSON(t, &ver, "clusterAclConfigVersion", "-n", ns, "-c", "DefaultCluster", "--toolsConfig", tools)
	if len(ver.Rows) != 1 || ver.Rows[0].Counter != 2 || ver.Rows[0].File != aclPath || ver.Rows[0].BrokerAddr != addr ||
		ver.Rows[0].BrokerName != "broker-a" || ver.Rows[0].Cluster != "DefaultCluster" {
		t.Fatalf("clusterAclConfigVersion --json after two edits: %+v", ver)
	}
	contains(t, ok(t, "clusterAclConfigVersion", "-n", ns, "-b", addr, "--toolsConfig", tools),
		"#Cluster Name", "#AclConfigVersionNum", "#AclLastUpdateTime", aclPath,
		"get broker's plain access config version success. Address:"+addr)

	// A non-admin account may read the version but not edit.
	plain := filepath.Join(t.TempDir(), "plain.yml")
	if err := os.WriteFile(plain, []byte("accessKey: plainUser\nsecretKey: plainSecret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	failing(t, ExitFailed, []string{"NO_PERMISSION", "is not admin"}, "updateAclConfig", "-n", ns, "-b", addr,
		"-a", ak, "-i", "PUB", "--toolsConfig", plain)
	failing(t, ExitFailed, []string{"NO_PERMISSION", "is not admin"}, "getAclConfig", "-n", ns, "-b", addr, "--toolsConfig", plain)

	out = ok(t, "deleteAclConfig", "-n", ns, "-b", addr, "-a", ak, "--toolsConfig", tools)
	contains(t, out, "delete plain access config account from "+addr+" success.", "account's accessKey is:newcomer1")
	err = signedSend(t, c, addr, topic, ak, sk)
	if !client.HasCode(err, remoting.NoPermission) || !strings.Contains(err.Error(), "is not in the ACL file") {
		t.Fatalf("send after deleteAclConfig: %v", err)
	}
	if err := officialSend(t, c, topic, ak, sk); err == nil || !strings.Contains(err.Error(), "is not in the ACL file") {
		t.Fatalf("the official Go client's signed send after deleteAclConfig: %v", err)
	}
	failing(t, ExitFailed, []string{"DELETE_ACL_CONFIG_FAILED", "newcomer1"}, "deleteAclConfig", "-n", ns, "-b", addr,
		"-a", ak, "--toolsConfig", tools)
	failing(t, ExitFailed, []string{"UPDATE_AND_CREATE_ACL_CONFIG_FAILED", "needs a secretKey"}, "updateAclConfig",
		"-n", ns, "-b", addr, "-a", "another1", "--toolsConfig", tools)
	failing(t, ExitFailed, []string{"UPDATE_AND_CREATE_ACL_CONFIG_FAILED", `permission "WRITE"`}, "updateAclConfig",
		"-n", ns, "-b", addr, "-a", "plainUser", "-i", "WRITE", "--toolsConfig", tools)

	// Global white addresses: an unsigned send passes from 127.0.0.1 once it is white, not after.
	if err := signedSend(t, c, addr, topic, "", ""); !client.HasCode(err, remoting.NoPermission) {
		t.Fatalf("unsigned send: %v", err)
	}
	out = ok(t, "updateGlobalWhiteAddr", "-n", ns, "-c", "DefaultCluster", "-g", "10.0.0.*,127.0.0.1", "--toolsConfig", tools)
	contains(t, out, "update global white remote addresses to "+addr+" success.")
	if err := signedSend(t, c, addr, topic, "", ""); err != nil {
		t.Fatalf("unsigned send from a white address: %v", err)
	}
	contains(t, ok(t, "getAclConfig", "-n", ns, "-b", addr, "--toolsConfig", tools),
		"globalWhiteRemoteAddresses: [10.0.0.*, 127.0.0.1]")
	ok(t, "updateGlobalWhiteAddr", "-n", ns, "-b", addr, "-g", "", "--toolsConfig", tools)
	if err := signedSend(t, c, addr, topic, "", ""); !client.HasCode(err, remoting.NoPermission) {
		t.Fatalf("unsigned send after clearing the white addresses: %v", err)
	}
	failing(t, ExitFailed, []string{"UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED", "is not this broker's ACL file"},
		"updateGlobalWhiteAddr", "-n", ns, "-b", addr, "-g", "10.1.1.1", "-p", "/etc/other.yml", "--toolsConfig", tools)
	okJSON(t, &ver, "clusterAclConfigVersion", "-n", ns, "-b", addr, "--toolsConfig", tools)
	if len(ver.Rows) != 1 || ver.Rows[0].Counter != 5 {
		t.Fatalf("version after five edits: %+v", ver)
	}
}

// TestACLCommandsWithoutACL: a broker with aclEnable off refuses the ACL requests, naming the key.
func TestACLCommandsWithoutACL(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	ns, addr := c.NamesrvAddr(), c.Broker(0).Addr()
	failing(t, ExitFailed, []string{"UPDATE_AND_CREATE_ACL_CONFIG_FAILED", "aclEnable=false"}, "updateAclConfig",
		"-n", ns, "-b", addr, "-a", "someone1", "-s", "someSecret")
	failing(t, ExitFailed, []string{"aclEnable=false"}, "clusterAclConfigVersion", "-n", ns, "-b", addr)
	failing(t, ExitBadArgs, []string{"one of -b (--brokerAddr) or -c (--clusterName) is required"}, "getAclConfig", "-n", ns)
}
