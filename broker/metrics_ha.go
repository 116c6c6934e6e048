package broker

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/ha"
	"github.com/rocketraft/rocketraft/internal/metrics"
)

// haSlaves is a master's list of slave connections.
type haSlaves interface {
	// Connections lists the slave connections at the time of the call (safe from any goroutine).
	Connections() []ha.ConnectionInfo
}

var _ haSlaves = (*ha.Service)(nil)

var (
	haConnectionsDesc = metrics.Desc("rocketmq_ha_slave_connections",
		"Slave connections on this master's HA port.")
	haSlaveLagDesc = metrics.Desc("rocketmq_ha_slave_lag_bytes",
		"CommitLog bytes a slave has not acknowledged: the master's max physical offset minus the slave's last "+
			"report. Absent for a connection that has not reported yet.", "slave")
)

// newHACollector reads the slave connections of a master at scrape time. The slave label is the
// connection's remote address (host:port): a slave that reconnects shows up under a new port.
func newHACollector(slaves haSlaves, maxPhyOffset func() int64) prometheus.Collector {
	return metrics.NewCollector(func(ch chan<- prometheus.Metric) {
		conns := slaves.Connections()
		end := maxPhyOffset()
		ch <- metrics.Gauge(haConnectionsDesc, float64(len(conns)))
		for _, c := range conns {
			if c.AckOffset >= 0 {
				ch <- metrics.Gauge(haSlaveLagDesc, float64(max(end-c.AckOffset, 0)), c.RemoteAddr)
			}
		}
	}, haConnectionsDesc, haSlaveLagDesc)
}
