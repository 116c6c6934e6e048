package cluster

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/broker"
)

// startSlaves starts opts.Slaves slaves for each of the opts.Brokers masters.
func (c *Cluster) startSlaves(opts Options) {
	c.t.Helper()
	for i := 0; i < opts.Brokers; i++ {
		for j := 0; j < opts.Slaves; j++ {
			cfg := SlaveConfig(c.t, c.NamesrvAddr(), c.configs[i].BrokerName, int64(j+1))
			idx := c.SlaveIndex(i, j, opts)
			if opts.Configure != nil {
				opts.Configure(idx, &cfg)
			}
			c.AddBroker(cfg)
		}
	}
}

// SlaveIndex is the broker index of master i's slave j in a cluster started with opts.
func (c *Cluster) SlaveIndex(i, j int, opts Options) int {
	brokers := max(opts.Brokers, 1)
	if opts.NoBrokers {
		brokers = opts.Brokers
	}
	return brokers + i*opts.Slaves + j
}

// SlaveConfig is a test broker config for slave id (> 0) of the broker group brokerName.
func SlaveConfig(t testing.TB, namesrvAddr, brokerName string, id int64) broker.Config {
	cfg := TestBrokerConfig(t, namesrvAddr, brokerName)
	cfg.BrokerID = id
	cfg.BrokerRole = broker.RoleSlave
	return cfg
}

// AddBroker starts one more broker with cfg (a slave of a master in a child process, say) and
// returns its index.
func (c *Cluster) AddBroker(cfg broker.Config) int {
	c.t.Helper()
	i := c.addSlot(cfg)
	c.StartBroker(i)
	return i
}

// addSlot adds cfg as a broker slot, not started, and returns its index.
func (c *Cluster) addSlot(cfg broker.Config) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configs = append(c.configs, cfg)
	c.brokers = append(c.brokers, nil)
	return len(c.brokers) - 1
}

// BrokerAddrs is brokerName's id -> address table in the first running name server's cluster info.
func (c *Cluster) BrokerAddrs(brokerName string) (map[int64]string, error) {
	addrs := c.NamesrvAddrs()
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no name server running")
	}
	info, err := c.clusterInfo(addrs[0])
	if err != nil {
		return nil, err
	}
	out := map[int64]string{}
	maps.Copy(out, info.BrokerAddrTable[brokerName].BrokerAddrs)
	return out, nil
}

// WaitBrokerAddrs waits until brokerName's id -> address table is exactly want.
func (c *Cluster) WaitBrokerAddrs(brokerName string, want map[int64]string) {
	c.t.Helper()
	Eventually(c.t, 20*time.Second, func() bool {
		got, err := c.BrokerAddrs(brokerName)
		if err != nil || len(got) != len(want) {
			return false
		}
		for id, a := range want {
			if got[id] != a {
				return false
			}
		}
		return true
	}, "broker %s registered as %v", brokerName, want)
}
