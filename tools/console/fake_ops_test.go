package console

import (
	"context"
	"fmt"

	"github.com/rocketraft/rocketraft/protocol"
)

// The fake's answers for the operations pages (api_ops.go).

func (f *fakeSource) MessageTrace(_ context.Context, traceTopic, msgID string) ([]TraceRecord, error) {
	if err := f.call("MessageTrace " + traceTopic + " " + msgID); err != nil {
		return nil, err
	}
	return []TraceRecord{{Type: "Pub", MsgID: msgID, Group: "PG", Success: true}}, nil
}

func (f *fakeSource) SubscriptionGroups(context.Context) ([]SubscriptionGroup, error) {
	if err := f.call("SubscriptionGroups"); err != nil {
		return nil, err
	}
	return []SubscriptionGroup{{Cluster: "DefaultCluster", BrokerName: "broker-a", Addr: "127.0.0.1:10911",
		Config: protocol.SubscriptionGroupConfig{GroupName: "G1", ConsumeEnable: true, RetryMaxTimes: 16}}}, nil
}

func (f *fakeSource) RunningInfo(_ context.Context, group, clientID string) (*RunningInfo, error) {
	if err := f.call("RunningInfo " + group + " " + clientID); err != nil {
		return nil, err
	}
	return &RunningInfo{Group: group, ClientID: clientID, Version: "V4_9_4"}, nil
}

func (f *fakeSource) BrokerConfig(_ context.Context, addr string) (map[string]string, error) {
	if err := f.call("BrokerConfig " + addr); err != nil {
		return nil, err
	}
	return map[string]string{"brokerName": "broker-a"}, nil
}

func (f *fakeSource) TopicTPS(context.Context) ([]TopicTPS, error) {
	if err := f.call("TopicTPS"); err != nil {
		return nil, err
	}
	return []TopicTPS{{Topic: "Orders", InTPS: 2.5}}, nil
}

func (a *fakeAdmin) UpdateSubscriptionGroup(_ context.Context, cluster string, cfg protocol.SubscriptionGroupConfig) ([]string, error) {
	a.subgroups = append(a.subgroups, fmt.Sprintf("%s@%s retry %d", cfg.GroupName, cluster, cfg.RetryMaxTimes))
	return []string{"127.0.0.1:10911"}, a.err
}

func (a *fakeAdmin) DeleteSubscriptionGroup(_ context.Context, cluster, group string) ([]string, error) {
	a.subgroups = append(a.subgroups, "delete "+group+"@"+cluster)
	return []string{"127.0.0.1:10911"}, a.err
}

func (a *fakeAdmin) SendMessage(_ context.Context, m TestMessage) (*SendResult, error) {
	a.sent = append(a.sent, m)
	return &SendResult{Status: "SEND_OK", MsgID: "M1", BrokerName: "broker-a"}, a.err
}

func (a *fakeAdmin) ResendMessages(_ context.Context, topic string, ids []string) ([]Resent, error) {
	var out []Resent
	for _, id := range ids {
		a.resent = append(a.resent, topic+" "+id)
		out = append(out, Resent{MsgID: id, Topic: "Orders", Result: &SendResult{Status: "SEND_OK"}})
	}
	return out, a.err
}

func (a *fakeAdmin) ConsumeDirectly(_ context.Context, topic, id, group, clientID string) (*DirectResult, error) {
	a.direct = append(a.direct, fmt.Sprintf("%s %s %s %s", topic, id, group, clientID))
	return &DirectResult{ConsumeResult: "CR_SUCCESS"}, a.err
}

func (a *fakeAdmin) ACLConfigs(context.Context) ([]BrokerACL, error) {
	return []BrokerACL{{Cluster: "DefaultCluster", BrokerName: "broker-a", Addr: "127.0.0.1:10911", GlobalWhiteAddrs: []string{"10.1.1.*"},
		Accounts: []protocol.PlainAccessConfig{{AccessKey: "rocketmqAdmin", SecretKey: "adminSecret123", Admin: true}}}}, a.err
}

func (a *fakeAdmin) UpdateACLAccount(_ context.Context, cluster string, acc protocol.PlainAccessConfig) ([]string, error) {
	a.acl = append(a.acl, fmt.Sprintf("update %s@%s secret %q topics %v", acc.AccessKey, cluster, acc.SecretKey, acc.TopicPerms))
	return []string{"127.0.0.1:10911"}, a.err
}

func (a *fakeAdmin) DeleteACLAccount(_ context.Context, cluster, accessKey string) ([]string, error) {
	a.acl = append(a.acl, "delete "+accessKey+"@"+cluster)
	return []string{"127.0.0.1:10911"}, a.err
}

func (a *fakeAdmin) UpdateGlobalWhiteAddrs(_ context.Context, cluster string, addrs []string) ([]string, error) {
	a.acl = append(a.acl, fmt.Sprintf("white %s %v", cluster, addrs))
	return []string{"127.0.0.1:10911"}, a.err
}
