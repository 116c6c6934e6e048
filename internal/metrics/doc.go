// Package metrics is the Prometheus side of the broker and the name server: RocketMQ 5's config keys of the
// endpoint (exporter.go: metricsExporterType DISABLE by default or PROM, metricsPromExporterHost,
// metricsPromExporterPort, and metricsPort, the older synonym), an HTTP endpoint serving /metrics from a
// registry (server.go), helpers to build collectors that read existing state when
// scraped (collect.go), lock-free per-key counters for the few numbers that must be counted on a hot
// path (perkey.go), and the Raft series over a small interface the Raft mode implements (raft.go).
//
// # How the numbers are taken
//
// Most series are read at scrape time from the state the components already keep (store statistics,
// consumer offsets, routing tables), by custom prometheus.Collector values built with NewCollector;
// nothing is done per message for them. Where a number only exists as it passes (messages and bytes
// per topic, requests per code), the component counts it in a PerKey table: one lock-free map read and
// a few atomic adds per event. The broker's RocketMQ 5 series keep RocketMQ's names, units and labels as
// its OpenTelemetry Prometheus exporter renders them (broker/metrics_rmq5.go: milliseconds where RocketMQ
// measures in milliseconds); our own series follow the Prometheus conventions: the rocketmq_ prefix, base
// units in the name (_seconds, _bytes, _ratio), _total for counters, no gauges for rates.
//
// # Lifecycle
//
// NewServer prepares the endpoint; Start binds its port (the error says which address) and serves on
// one tracked goroutine; Close shuts it down, waits for the scrapes in flight (so no collector runs
// after Close returns) and for that goroutine.
package metrics
