package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeClient bounds a scrape whose context has no deadline.
var scrapeClient = &http.Client{Timeout: 30 * time.Second}

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Scrape fetches the endpoint at addr (host:port) in the text exposition format and parses it: what
// Prometheus would see. Tests and tools use it.
func Scrape(ctx context.Context, addr string) (Families, error) {
	url := "http://" + addr + Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("metrics: scrape %s: %s: %s", url, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("metrics: parse scrape of %s: %w", url, err)
	}
	return fams, nil
}

// Value is the value of the one sample of family name whose labels include every pair of labels
// ("topic", "T", ...): a counter's or gauge's value, a histogram's sample count. ok is false when no
// sample matches.
func (f Families) Value(name string, labels ...string) (v float64, ok bool) {
	n := 0
	f.each(name, labels, func(x float64) { v, n = x, n+1 })
	return v, n == 1
}

// Sum adds the values of every sample of family name whose labels include labels (0 when none does).
func (f Families) Sum(name string, labels ...string) float64 {
	var sum float64
	f.each(name, labels, func(x float64) { sum += x })
	return sum
}

// Count is how many samples of family name have labels including labels.
func (f Families) Count(name string, labels ...string) int {
	n := 0
	f.each(name, labels, func(float64) { n++ })
	return n
}

func (f Families) each(name string, labels []string, fn func(float64)) {
	fam := f[name]
	if fam == nil {
		return
	}
	for _, m := range fam.GetMetric() {
		if matches(m, labels) {
			fn(sampleValue(m))
		}
	}
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}
