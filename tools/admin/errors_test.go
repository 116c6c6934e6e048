package admin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

func TestHelp(t *testing.T) {
	out := ok(t)
	contains(t, out, "The most commonly used mqadmin commands are:", "updateTopic", "consumeMessage",
		"getRaftStatus", "transferLeadership", "updateAclConfig")
	if strings.Contains(out, "Not available yet") {
		t.Fatalf("the help lists an empty section:\n%s", out)
	}
	if ok(t, "help") != out {
		t.Fatal("mqadmin help differs from mqadmin without arguments")
	}
	for _, c := range commands() {
		help := ok(t, "help", c.name)
		contains(t, help, "usage: mqadmin "+c.name, c.desc, "-n,--namesrvAddr <arg>", "--json", "--accessKey <arg>")
		if ok(t, c.name, "-h") != help {
			t.Fatalf("mqadmin %s -h differs from mqadmin help %s", c.name, c.name)
		}
	}
	contains(t, ok(t, "help", "updateTopic"), "-b,--brokerAddr <arg>", "-t,--topic <arg>", "topic name (required)",
		"-o,--order <arg>", "(true|false)")
	failing(t, ExitBadArgs, []string{"noSuchCommand does not exist"}, "help", "noSuchCommand")
}

func TestBadCommandLines(t *testing.T) {
	for _, tc := range []struct {
		argv  []string
		wants []string
	}{
		{[]string{"noSuchCommand"}, []string{"the sub command noSuchCommand does not exist"}},
		{[]string{"getRaftStatus", "-n", "127.0.0.1:9876"}, []string{"one of -b (--brokerAddr) or -c (--clusterName) is required"}},
		{[]string{"transferLeadership", "-n", "127.0.0.1:9876"}, []string{"option -b (--brokerAddr) is required"}},
		{[]string{"topicRoute", "-n", "127.0.0.1:9876", "-x"}, []string{"flag provided but not defined: -x"}},
		{[]string{"topicRoute", "-n", "127.0.0.1:9876"}, []string{"option -t (--topic) is required"}},
		{[]string{"topicRoute", "-n", "127.0.0.1:9876", "-t"}, []string{"flag needs an argument: -t"}},
		{[]string{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-c", "C", "-r", "many"}, []string{"-r", `"many" is not an integer`}},
		{[]string{"updateSubGroup", "-n", "127.0.0.1:9876", "-g", "G", "-c", "C", "-q", "x"}, []string{"-q", `"x" is not an integer`}},
		{[]string{"updateSubGroup", "-n", "127.0.0.1:9876", "-g", "G", "-c", "C", "-r", "3000000000"}, []string{"-r", `"3000000000" is outside -2147483648..2147483647`}},
		{[]string{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T"}, []string{"one of -b (--brokerAddr) or -c (--clusterName) is required"}},
		{[]string{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-b", "x:1", "-c", "C"}, []string{"give only one of"}},
		{[]string{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-c", "C", "-o", "yes"}, []string{"-o", `"yes" is not true or false`}},
		{[]string{"topicList", "-n", "127.0.0.1:9876", "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"sendMessage", "-n", "127.0.0.1:9876", "-t", "T", "-p", "b", "-i", "1"}, []string{"option -i (--qid) needs -b (--broker)"}},
		{[]string{"resetOffsetByTime", "-n", "127.0.0.1:9876", "-t", "T", "-g", "G", "-s", "yesterday"}, []string{"-s (--timestamp)", "yesterday"}},
		{[]string{"clusterList", "--timeout", "0s"}, []string{"timeout", "positive duration"}},
		{[]string{"clusterList"}, []string{"no name server", "NAMESRV_ADDR"}},
		{[]string{"clusterList", "-n", "127.0.0.1:9876", "--accessKey", "ak"}, []string{"--accessKey needs --secretKey"}},
		{[]string{"clusterList", "-n", "127.0.0.1:9876", "--toolsConfig", "/no/such/tools.yml"}, []string{"--toolsConfig", "no such file"}},
	} {
		failing(t, ExitBadArgs, tc.wants, tc.argv...)
	}
}

// An unreachable name server, an unknown topic, group or cluster: exit 1 with a one-line reason.
func TestServerSideFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	failing(t, ExitFailed, []string{"cluster info", dead, "connect"}, "clusterList", "-n", dead)
	failing(t, ExitFailed, []string{"connect"}, "brokerStatus", "-n", dead, "-b", dead)

	c := cluster.Start(t, cluster.Options{})
	ns := c.NamesrvAddr()
	// One dead name server in the list is skipped.
	contains(t, ok(t, "clusterList", "-n", dead+";"+ns), "broker-a")
	failing(t, ExitFailed, []string{"topic NoSuchTopic does not exist", "TOPIC_NOT_EXIST"}, "topicRoute", "-n", ns, "-t", "NoSuchTopic")
	failing(t, ExitFailed, []string{"topic NoSuchTopic does not exist"}, "topicStatus", "-n", ns, "-t", "NoSuchTopic")
	failing(t, ExitFailed, []string{"topic NoSuchTopic does not exist"}, "sendMessage", "-n", ns, "-t", "NoSuchTopic", "-p", "x")
	failing(t, ExitFailed, []string{"consumer group NoSuchGroup has no consume stats"}, "consumerProgress", "-n", ns, "-g", "NoSuchGroup")
	failing(t, ExitFailed, []string{"cluster NoSuchCluster is not known"}, "updateTopic", "-n", ns, "-c", "NoSuchCluster", "-t", "T")
	failing(t, ExitFailed, []string{"INVALID_PARAMETER"}, "updateTopic", "-n", ns, "-b", c.Broker(0).Addr(), "-t", "bad topic!")
	// NAMESRV_ADDR stands in for -n.
	o := mqadminEnv(t, map[string]string{"NAMESRV_ADDR": ns}, "clusterList")
	if o.code != ExitOK || !strings.Contains(o.stdout, "broker-a") {
		t.Fatalf("clusterList with NAMESRV_ADDR: %+v", o)
	}
}

// With credentials, every request mqadmin sends is signed so that remoting.VerifySignature accepts it:
// from --accessKey/--secretKey, from --toolsConfig, and from $ROCKETMQ_HOME/conf/tools.yml.
func TestCredentialsSignRequests(t *testing.T) {
	secrets := map[string]string{"rocketmq2": "12345678"}
	var (
		mu       sync.Mutex
		accounts []string
	)
	pool := remoting.NewPool("fake-namesrv", 1, 16)
	s := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0"}, cluster.TestLogger(t, 0))
	s.Register(remoting.GetBrokerClusterInfo, pool, func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		ak, err := remoting.VerifySignature(req, func(ak string) (string, bool) { sk, ok := secrets[ak]; return sk, ok })
		if err != nil {
			return remoting.NewResponse(remoting.NoPermission, err.Error())
		}
		mu.Lock()
		accounts = append(accounts, ak)
		mu.Unlock()
		return remoting.NewJSONResponse(map[string]any{"brokerAddrTable": map[string]any{}, "clusterAddrTable": map[string]any{}})
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ns := s.Addr().String()

	ok(t, "clusterList", "-n", ns, "--accessKey", "rocketmq2", "--secretKey", "12345678")
	failing(t, ExitFailed, []string{"NO_PERMISSION", "signature does not match"}, "clusterList", "-n", ns,
		"--accessKey", "rocketmq2", "--secretKey", "wrong")
	failing(t, ExitFailed, []string{"NO_PERMISSION", "no AccessKey"}, "clusterList", "-n", ns)

	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.yml")
	if err := os.WriteFile(tools, []byte("accessKey: rocketmq2\nsecretKey: 12345678\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok(t, "clusterList", "-n", ns, "--toolsConfig", tools)
	if err := os.MkdirAll(filepath.Join(dir, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tools, filepath.Join(dir, "conf", "tools.yml")); err != nil {
		t.Fatal(err)
	}
	if o := mqadminEnv(t, map[string]string{"ROCKETMQ_HOME": dir}, "clusterList", "-n", ns); o.code != ExitOK {
		t.Fatalf("clusterList with $ROCKETMQ_HOME/conf/tools.yml: %+v", o)
	}
	if err := os.WriteFile(tools, []byte("accessKey: rocketmq2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	failing(t, ExitBadArgs, []string{"has no secretKey"}, "clusterList", "-n", ns, "--toolsConfig", tools)

	mu.Lock()
	defer mu.Unlock()
	if len(accounts) != 3 {
		t.Fatalf("verified requests of %v, want 3", accounts)
	}
}
