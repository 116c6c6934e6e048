package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector is a prometheus.Collector made of a fixed list of descriptions and a function that reads the
// current state and sends metrics of those descriptions only. The registry checks that it does.
type Collector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector of descs whose values collect reads at every scrape. collect runs on the
// scrape's goroutine, concurrently with everything but itself only when scrapes overlap.
func NewCollector(collect func(ch chan<- prometheus.Metric), descs ...*prometheus.Desc) *Collector {
	return &Collector{descs: descs, collect: collect}
}

// Describe sends the fixed descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the state.
func (c *Collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// Desc describes a metric family: its full name, help text and variable labels.
func Desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// Gauge is a gauge sample of d.
func Gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

// Counter is a counter sample of d.
func Counter(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// Bool is 1 for true, 0 for false (for 0/1 gauges).
func Bool(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

// Histogram is a histogram sample of d in seconds from bucketed durations: counts[i] counts the samples at
// or below bounds[i] and above bounds[i-1]; counts[len(bounds)], if present, those above every bound. The
// sample count is the sum of counts, so the buckets and the count agree even when the counts were read
// while samples were being added.
func Histogram(d *prometheus.Desc, bounds []time.Duration, counts []int64, sum time.Duration, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, b := range bounds {
		if i < len(counts) {
			cum += uint64(max(counts[i], 0))
		}
		buckets[b.Seconds()] = cum
	}
	for i := len(bounds); i < len(counts); i++ {
		cum += uint64(max(counts[i], 0))
	}
	return prometheus.MustNewConstHistogram(d, cum, sum.Seconds(), buckets, labels...)
}
