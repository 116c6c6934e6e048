package broker

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

func TestPutErrorResponseCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code remoting.ResponseCode
		says string
	}{
		{fmt.Errorf("body 5000000 > 4194304: %w", store.ErrMessageTooLarge), remoting.MessageIllegal, "4194304"},
		{fmt.Errorf("%w", store.ErrPropertiesTooLarge), remoting.MessageIllegal, "refused"},
		{fmt.Errorf("disk 93%%: %w", store.ErrDiskFull), remoting.ServiceNotAvailable, "disk is full"},
		{fmt.Errorf("flush failed: %w", store.ErrNotWritable), remoting.ServiceNotAvailable, "not writable"},
		{store.ErrServiceNotAvailable, remoting.ServiceNotAvailable, "not available"},
		{errors.New("boom"), remoting.SystemError, "boom"},
	} {
		resp := putErrorResponse(tc.err, "T")
		if resp.Code != int32(tc.code) || !strings.Contains(resp.Remark, tc.says) {
			t.Errorf("%v: %s %q, want %s saying %q", tc.err, remoting.ResponseCode(resp.Code), resp.Remark, tc.code, tc.says)
		}
	}
}

func TestConfigValidateNamesKeys(t *testing.T) {
	for _, tc := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.ListenPort = 70000 }, "listenPort"},
		{func(c *Config) { c.BrokerName = "" }, "brokerName"},
		{func(c *Config) { c.BrokerRole = "BOSS" }, "brokerRole"},
		{func(c *Config) { c.BrokerRole = RoleSlave }, "brokerId"},
		{func(c *Config) { c.BrokerID = 2 }, "brokerId"},
		{func(c *Config) { c.NamesrvAddr = "nohost" }, "namesrvAddr"},
		{func(c *Config) { c.BrokerIP1 = "300.1.1.1" }, "brokerIP1"},
		{func(c *Config) { c.DefaultTopicQueueNums = 0 }, "defaultTopicQueueNums"},
		{func(c *Config) { c.SendMessageThreadPoolNums = 0 }, "sendMessageThreadPoolNums"},
		{func(c *Config) { c.FlushDiskType = "SOMETIMES" }, "flushDiskType"},
		{func(c *Config) { c.MsgTraceTopicName = "trace topic" }, "msgTraceTopicName"},
		{func(c *Config) { c.GCHeapFloorMB = -1 }, "gcHeapFloorMB"},
	} {
		c := DefaultConfig()
		c.BrokerName = "b"
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
	c := DefaultConfig()
	c.BrokerName = "broker-a"
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestHasAndAddProperty(t *testing.T) {
	props := "KEYS\x01k1\x02TAGS\x01A\x02"
	if !message.HasProperty(props, "TAGS") || message.HasProperty(props, "TAG") || message.HasProperty(props, "A") {
		t.Fatal("hasProperty matched wrongly")
	}
	b := &Broker{cfg: DefaultConfig(), uniqIDs: message.NewUniqIDGenerator(netip.MustParseAddr("127.0.0.1"), [4]byte{})}
	out := b.addBrokerProperties(props)
	m := message.ParseProperties(out)
	if m["CLUSTER"] != "DefaultCluster" || len(m["UNIQ_KEY"]) != 32 || m["KEYS"] != "k1" || m["TAGS"] != "A" {
		t.Fatalf("properties after the broker's additions: %v", m)
	}
	// Without the trailing separator the Go client's encoder always writes.
	m = message.ParseProperties(b.addBrokerProperties("TAGS\x01A"))
	if m["TAGS"] != "A" || m["CLUSTER"] == "" {
		t.Fatalf("properties %v", m)
	}
	// A UNIQ_KEY the producer set is kept.
	if m := message.ParseProperties(b.addBrokerProperties("UNIQ_KEY\x01abc\x02")); m["UNIQ_KEY"] != "abc" {
		t.Fatalf("producer's UNIQ_KEY replaced: %v", m)
	}
}
