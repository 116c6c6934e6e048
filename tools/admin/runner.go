package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
)

// runner is one command's run: its common options and its client.
type runner struct {
	com *common
	f   *flags
	env Env
	c   *client.Client
}

func newRunner(com *common, f *flags, env Env) (*runner, error) {
	creds, err := loadCredentials(com, env.Getenv)
	if err != nil {
		return nil, err
	}
	ns := com.namesrv
	if ns == "" {
		ns = env.Getenv("NAMESRV_ADDR")
	}
	return &runner{com: com, f: f, env: env, c: NewClient(client.SplitAddrs(ns), com.timeout, creds, env.Logger)}, nil
}

func (r *runner) close() { _ = r.c.Close() }

// brokerRef is one broker process: its name, id and address.
type brokerRef struct {
	cluster string
	name    string
	id      int64
	addr    string
}

// brokers lists the brokers the name servers know, by cluster, broker name and id. With cluster != "" only
// that cluster's, and an unknown cluster is an error; with mastersOnly only brokers of id 0.
func brokers(ci *protocol.ClusterInfo, cluster string, mastersOnly bool) ([]brokerRef, error) {
	if cluster != "" {
		if _, ok := ci.ClusterAddrTable[cluster]; !ok {
			return nil, fmt.Errorf("cluster %s is not known to the name servers (clusters: %v)", cluster, sortedKeys(ci.ClusterAddrTable))
		}
	}
	var out []brokerRef
	for _, cl := range sortedKeys(ci.ClusterAddrTable) {
		if cluster != "" && cl != cluster {
			continue
		}
		names := append([]string(nil), ci.ClusterAddrTable[cl]...)
		sort.Strings(names)
		for _, name := range names {
			bd, ok := ci.BrokerAddrTable[name]
			if !ok {
				continue
			}
			ids := make([]int64, 0, len(bd.BrokerAddrs))
			for id := range bd.BrokerAddrs {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				if mastersOnly && id != protocol.MasterID {
					continue
				}
				out = append(out, brokerRef{cluster: cl, name: name, id: id, addr: bd.BrokerAddrs[id]})
			}
		}
	}
	return out, nil
}

// targets resolves the -b / -c choice of a command: the broker at -b, or the brokers of cluster -c
// (masters only, or with their slaves).
func (r *runner) targets(ctx context.Context, addr, cluster string, mastersOnly bool) ([]brokerRef, error) {
	if addr != "" {
		return []brokerRef{{addr: addr, id: -1}}, nil
	}
	ci, err := r.c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	refs, err := brokers(ci, cluster, mastersOnly)
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("cluster %s has no broker", cluster)
	}
	return refs, nil
}

// brokerChoice is the -b / -c pair of the commands that act on one broker or on the brokers of a cluster.
type brokerChoice struct {
	f             *flags
	addr, cluster string
}

// chooseBrokers registers -b (--brokerAddr) and -c (--clusterName) with the given help texts.
func chooseBrokers(f *flags, addrUsage, clusterUsage string) *brokerChoice {
	b := &brokerChoice{f: f}
	f.String(&b.addr, "b", "brokerAddr", addrUsage, false)
	f.String(&b.cluster, "c", "clusterName", clusterUsage, false)
	return b
}

// resolve requires exactly one of -b and -c and returns the brokers meant: the one at -b, or the masters of
// cluster -c, with their slaves unless mastersOnly.
func (b *brokerChoice) resolve(ctx context.Context, r *runner, mastersOnly bool) ([]brokerRef, error) {
	if err := b.f.oneOf("brokerAddr", "clusterName"); err != nil {
		return nil, err
	}
	return r.targets(ctx, b.addr, b.cluster, mastersOnly)
}

// eachBroker calls fn for every broker, going on after a failure; it returns the addresses fn succeeded on
// and the failures joined.
func eachBroker(refs []brokerRef, fn func(brokerRef) error) ([]string, error) {
	done := []string{}
	var errs []error
	for _, ref := range refs {
		if err := fn(ref); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, ref.addr)
	}
	return done, errors.Join(errs...)
}

// routeBrokers lists a route's broker names with the address to ask, sorted by name.
func routeBrokers(route *protocol.TopicRouteData) []brokerRef {
	out := make([]brokerRef, 0, len(route.BrokerDatas))
	for _, bd := range route.BrokerDatas {
		if a := client.ReadAddr(bd.BrokerAddrs); a != "" {
			out = append(out, brokerRef{cluster: bd.Cluster, name: bd.BrokerName, addr: a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// brokerNameOf finds the broker name registered at addr.
func brokerNameOf(ci *protocol.ClusterInfo, addr string) (string, bool) {
	for name, bd := range ci.BrokerAddrTable {
		for _, a := range bd.BrokerAddrs {
			if a == addr {
				return name, true
			}
		}
	}
	return "", false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
