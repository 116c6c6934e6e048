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
		"Slave connections on this master's HA port (classic replication).")
	haSlaveLagDesc = metrics.Desc("rocketmq_ha_slave_lag_bytes",
		"CommitLog bytes a slave has not acknowledged: the master's max physical offset minus the slave's last "+
			"report. Absent for a connection that has not reported yet.", "slave")
	haMasterConnectedDesc = metrics.Desc("rocketmq_ha_master_connected",
		"1 while this slave's HA client is connected to its master, else 0 (classic replication).")
)

// collectSlaves sends the number of slave connections and, per connection that has reported, its lag
// behind end. The slave label is the connection's remote address (host:port): a slave that reconnects
// shows up under a new port, and its old series ends.
func collectSlaves(ch chan<- prometheus.Metric, slaves haSlaves, end int64) {
	conns := slaves.Connections()
	ch <- metrics.Gauge(haConnectionsDesc, float64(len(conns)))
	for _, c := range conns {
		if c.AckOffset >= 0 {
			ch <- metrics.Gauge(haSlaveLagDesc, float64(max(end-c.AckOffset, 0)), c.RemoteAddr)
		}
	}
}
