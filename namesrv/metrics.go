package namesrv

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocketraft/rocketraft/internal/metrics"
	"github.com/rocketraft/rocketraft/remoting"
)

// serverMetrics is the name server's Prometheus endpoint (metricsExporterType=PROM, metricsPromExporterPort
// 5556): the routing tables read at scrape time, and a counter per request code. Off (DISABLE, the default)
// it is empty and costs nothing.
type serverMetrics struct {
	server   *metrics.Server // nil when the endpoint is off
	requests metrics.PerKey[remoting.RequestCode, atomic.Int64]
}

var (
	brokersDesc = metrics.Desc("rocketmq_namesrv_brokers",
		"Broker addresses registered here, by cluster and role (master: brokerId 0).", "cluster", "role")
	topicsDesc   = metrics.Desc("rocketmq_namesrv_topics", "Topics with route data here.")
	requestsDesc = metrics.Desc("rocketmq_namesrv_requests_total",
		"Requests received for a code this name server serves and let through by its guards (a write the ACL refuses is not counted), by request code and RocketMQ's name of it.",
		"code", "request")
	lockHoldDesc = metrics.Desc("rocketmq_namesrv_route_write_lock_seconds",
		"How long the routing tables' write lock was held, each time it was taken.")
	rebuildsDesc = metrics.Desc("rocketmq_namesrv_route_rebuilds_total",
		"Route answers encoded: once per topic asked for and again after each change that touched it; the other answers come from the cache.")
)

// newServerMetrics prepares the endpoint on bindAddress (or metricsPromExporterHost) and, when it is on, counts the
// requests the guards let through (the ACL's, acl.go) with a remoting request observer.
func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{}
	if !s.cfg.ExporterConfig.On() {
		return m
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewCollector(func(ch chan<- prometheus.Metric) {
		m.collect(s.routes, ch)
	}, brokersDesc, topicsDesc, requestsDesc, lockHoldDesc, rebuildsDesc))
	m.server = metrics.NewEndpoint(s.cfg.ExporterConfig, s.cfg.ListenAddr, reg, s.logger.With("component", "metrics"))
	s.rs.AddRequestObserver("namesrv_requests", m.countRequest)
	return m
}

// countRequest is a remoting.RequestObserver: it counts the request by its code.
func (m *serverMetrics) countRequest(_ *remoting.Conn, req *remoting.Command) {
	m.requests.Get(remoting.RequestCode(req.Code)).Add(1)
}

func (m *serverMetrics) collect(routes *RouteInfoManager, ch chan<- prometheus.Metric) {
	type key struct{ cluster, role string }
	brokers := map[key]int{}
	for _, bd := range routes.ClusterInfo().BrokerAddrTable {
		for id := range bd.BrokerAddrs {
			role := "slave"
			if id == 0 {
				role = "master"
			}
			brokers[key{bd.Cluster, role}]++
		}
	}
	for k, n := range brokers {
		ch <- metrics.Gauge(brokersDesc, float64(n), k.cluster, k.role)
	}
	ch <- metrics.Gauge(topicsDesc, float64(routes.TopicCount()))
	h := routes.LockHold()
	ch <- metrics.Histogram(lockHoldDesc, h.Bounds, h.Counts, h.Sum)
	ch <- metrics.Counter(rebuildsDesc, float64(routes.RouteRebuilds()))
	m.requests.Range(func(code remoting.RequestCode, n *atomic.Int64) bool {
		ch <- metrics.Counter(requestsDesc, float64(n.Load()), strconv.Itoa(int(code)), code.String())
		return true
	})
}

// start binds the port; the error of a port already taken names the key.
func (m *serverMetrics) start() error {
	if err := m.server.Start(); err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	return nil
}

// close stops the endpoint and waits for the scrapes in flight.
func (m *serverMetrics) close() error { return m.server.Close() }
