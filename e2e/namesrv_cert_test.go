package e2e

import (
	"context"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
	"github.com/rocketraft/rocketraft/namesrv"
	"github.com/rocketraft/rocketraft/remoting"
)

// The name server's ACL of this test: an admin, and the account brokers may sign registrations with.
const namesrvCertACL = `accounts:
  - accessKey: rocketmqAdmin
    secretKey: adminSecret123
    admin: true
  - accessKey: brokerAccount
    secretKey: brokerSecret1
`

// TestNamesrvClientCertificateACL runs a name server with aclEnable, TLS on its port (permissive, client
// certificates asked for) and the cluster CA as peerTlsTrustCertPath, and two real brokers that present
// node certificates of that CA to it (tlsEnable, tlsClientCertPath): broker 0 without an account (its
// registrations are unsigned), broker 1 signing with brokerAccount as well. Both register and their topic
// changes reach the routes; a forged REGISTER_BROKER and DELETE_TOPIC_IN_NAMESRV, plain and unsigned or over
// TLS with a certificate of another CA, are refused and the routes do not move.
func TestNamesrvClientCertificateACL(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	files := newTLSFiles(t)
	aclPath := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(aclPath, []byte(namesrvCertACL), 0o600); err != nil {
		t.Fatal(err)
	}
	var nodes [2]peertls.Config
	c := cluster.Start(t, cluster.Options{
		Brokers: 2,
		ConfigureNamesrv: func(_ int, nc *namesrv.Config) {
			files.serverTLS(&nc.TLS, remoting.TLSPermissive)
			nc.TLS.ServerNeedClientAuth = "optional"
			nc.ACL.AclEnable, nc.ACL.AclFile, nc.ACL.AclBrokerAccessKeys = true, aclPath, "brokerAccount"
			nc.ACL.PeerTlsTrustCertPath = ca.CertPath
		},
		Configure: func(i int, bc *broker.Config) {
			nodes[i] = ca.Node(bc.BrokerName, "0")
			bc.TLS.Enable, bc.TLS.ClientCertPath, bc.TLS.ClientKeyPath = true, nodes[i].CertPath, nodes[i].KeyPath
			if i == 1 {
				bc.ACL.AccessKey, bc.ACL.SecretKey = "brokerAccount", "brokerSecret1"
			}
		},
	})
	nsAddr := c.NamesrvAddrs()[0]
	createTopic(t, c, "CertTopic", 4) // both brokers register it: route on both
	route := func(topic string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := newWireClient(t).Invoke(ctx, nsAddr, remoting.NewRequest(remoting.GetRouteInfoByTopic,
			map[string]string{"topic": topic}, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code != int32(remoting.Success) {
			return remoting.ResponseCode(resp.Code).String()
		}
		return string(resp.Body)
	}
	before := route("CertTopic")

	// The forged requests: CertTopic's route onto an address of the sender's choosing, and its deletion.
	body := []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"CertTopic":{"topicName":"CertTopic",` +
		`"readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG"}},` +
		`"dataVersion":{"timestamp":1700000000000,"counter":99}},"filterServerList":[]}`)
	victim := c.Broker(0).Config()
	register := map[string]string{"brokerName": victim.BrokerName, "brokerAddr": "6.6.6.6:10911",
		"clusterName": victim.BrokerClusterName, "haServerAddr": "6.6.6.6:10912", "brokerId": "0",
		"compressed": "false", "bodyCrc32": strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10)}
	rogue := peertlstest.NewCA(t, "rogue").Node(victim.BrokerName, "0")
	rogueTLS := remoting.TLSConfig{Enable: true, ClientCertPath: rogue.CertPath, ClientKeyPath: rogue.KeyPath}
	rogueCfg, err := rogueTLS.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	rogueCl := remoting.NewClient(remoting.ClientConfig{TLS: rogueCfg, DialTimeout: 3 * time.Second}, cluster.TestLogger(t, 0))
	t.Cleanup(func() { _ = rogueCl.Close() })
	for name, cl := range map[string]*remoting.Client{"plain, unsigned": newWireClient(t), "another CA's certificate": rogueCl} {
		for _, req := range []*remoting.Command{
			remoting.NewRequest(remoting.RegisterBroker, register, body),
			remoting.NewRequest(remoting.DeleteTopicInNamesrv, map[string]string{"topic": "CertTopic"}, nil),
		} {
			code := remoting.RequestCode(req.Code)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := cl.Invoke(ctx, nsAddr, req)
			cancel()
			if err != nil {
				t.Fatalf("%s, %s: %v", name, code, err)
			}
			if resp.Code != int32(remoting.NoPermission) {
				t.Fatalf("%s, %s: got %s %q, want NO_PERMISSION", name, code, remoting.ResponseCode(resp.Code), resp.Remark)
			}
		}
	}
	if after := route("CertTopic"); after != before {
		t.Fatalf("the route moved:\nbefore %s\nafter  %s", before, after)
	}

	// The brokers' own registrations keep working: a new topic on both reaches the route.
	createTopic(t, c, "CertTopic2", 2)
}
