package admin

import (
	"context"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/tools/console"
)

// The console's ACL accounts page: the requests of getAclConfig, updateAclConfig, deleteAclConfig and
// updateGlobalWhiteAddr (cmd_acl.go), on every master of a cluster.

func (a *consoleAdmin) ACLConfigs(ctx context.Context) ([]console.BrokerACL, error) {
	ci, err := a.r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, consoleErr(err)
	}
	refs, _ := brokers(ci, "", true)
	out := make([]console.BrokerACL, 0, len(refs))
	for _, ref := range refs {
		b := console.BrokerACL{Cluster: ref.cluster, BrokerName: ref.name, Addr: ref.addr, GlobalWhiteAddrs: []string{},
			Accounts: []protocol.PlainAccessConfig{}}
		c, err := a.r.c.ACLConfig(ctx, ref.addr)
		switch {
		case err != nil:
			b.Error = err.Error()
		default:
			if c.GlobalWhiteAddrs != nil {
				b.GlobalWhiteAddrs = c.GlobalWhiteAddrs
			}
			if c.PlainAccessConfigs != nil {
				b.Accounts = c.PlainAccessConfigs
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// UpdateACLAccount sets every field of the account as given (the page edits whole accounts); an empty secret
// key keeps the account's.
func (a *consoleAdmin) UpdateACLAccount(ctx context.Context, cluster string, acc protocol.PlainAccessConfig) ([]string, error) {
	edit := &client.ACLAccount{AccessKey: acc.AccessKey, SecretKey: acc.SecretKey, WhiteRemoteAddress: &acc.WhiteRemoteAddress,
		Admin: &acc.Admin, DefaultTopicPerm: acc.DefaultTopicPerm, DefaultGroupPerm: acc.DefaultGroupPerm,
		TopicPerms: append([]string{}, acc.TopicPerms...), GroupPerms: append([]string{}, acc.GroupPerms...)}
	return a.eachMaster(ctx, cluster, func(addr string) error { return a.r.c.UpdateACLAccount(ctx, addr, edit) })
}

func (a *consoleAdmin) DeleteACLAccount(ctx context.Context, cluster, accessKey string) ([]string, error) {
	return a.eachMaster(ctx, cluster, func(addr string) error { return a.r.c.DeleteACLAccount(ctx, addr, accessKey) })
}

func (a *consoleAdmin) UpdateGlobalWhiteAddrs(ctx context.Context, cluster string, addrs []string) ([]string, error) {
	return a.eachMaster(ctx, cluster, func(addr string) error { return a.r.c.UpdateGlobalWhiteAddrs(ctx, addr, addrs, "") })
}

// eachMaster runs fn on every master of cluster and returns the addresses it succeeded on.
func (a *consoleAdmin) eachMaster(ctx context.Context, cluster string, fn func(addr string) error) ([]string, error) {
	refs, err := a.r.targets(ctx, "", cluster, true)
	if err != nil {
		return nil, consoleErr(err)
	}
	done, err := eachBroker(refs, func(ref brokerRef) error { return fn(ref.addr) })
	return done, consoleErr(err)
}
