package metrics

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Exporter types of metricsExporterType (RocketMQ 5's MetricsExporterType). OTLP_GRPC and LOG are RocketMQ's too
// but not served here: Validate refuses them with a message naming the key.
const (
	ExporterDisable = "DISABLE"
	ExporterProm    = "PROM"
)

// Default ports of the Prometheus endpoint: the broker's is RocketMQ 5's metricsPromExporterPort; the name
// server's is one below, so the two run side by side on one host with both endpoints on.
const (
	DefaultBrokerPort  = 5557
	DefaultNamesrvPort = 5556
)

// ExporterConfig holds RocketMQ 5's metrics keys, shared by the broker's and the name server's configs
// (squashed into them, so the keys are top-level). The endpoint is off unless metricsExporterType=PROM, as
// in RocketMQ 5: a process started with nothing but -n binds no metrics port, so any number of them run on
// one host. metricsPort is the key this project used before RocketMQ 5's: a value above 0 means PROM on
// that port.
type ExporterConfig struct {
	// MetricsExporterType is DISABLE (default) or PROM (a Prometheus /metrics endpoint).
	MetricsExporterType string `mapstructure:"metricsExporterType"`
	// MetricsPromExporterHost is the endpoint's address; "" = the component's own listen address (the
	// broker: all interfaces unless brokerIP1 is a loopback address; the name server: bindAddress).
	MetricsPromExporterHost string `mapstructure:"metricsPromExporterHost"`
	// MetricsPromExporterPort is the endpoint's port (broker 5557, name server 5556; 0 = any free port, logged).
	MetricsPromExporterPort int `mapstructure:"metricsPromExporterPort"`
	// MetricsPort is the older synonym: above 0 it turns the endpoint on at that port (PROM); 0 (default)
	// leaves it to the keys above.
	MetricsPort int `mapstructure:"metricsPort"`
}

// DefaultExporterConfig is the endpoint off, with port as metricsPromExporterPort for when it is turned on.
func DefaultExporterConfig(port int) ExporterConfig {
	return ExporterConfig{MetricsExporterType: ExporterDisable, MetricsPromExporterPort: port}
}

// On reports whether a Prometheus endpoint is to be served.
func (c ExporterConfig) On() bool {
	return c.MetricsPort > 0 || strings.EqualFold(strings.TrimSpace(c.MetricsExporterType), ExporterProm)
}

// Port is the endpoint's effective port (metricsPort when set, else metricsPromExporterPort).
func (c ExporterConfig) Port() int {
	if c.MetricsPort > 0 {
		return c.MetricsPort
	}
	return c.MetricsPromExporterPort
}

// PortKey is the key the effective port came from, for error messages.
func (c ExporterConfig) PortKey() string {
	if c.MetricsPort > 0 {
		return "metricsPort"
	}
	return "metricsPromExporterPort"
}

// Addr is the endpoint's host:port; defaultHost stands in for an empty metricsPromExporterHost.
func (c ExporterConfig) Addr(defaultHost string) string {
	host := strings.TrimSpace(c.MetricsPromExporterHost)
	if host == "" {
		host = defaultHost
	}
	return net.JoinHostPort(host, strconv.Itoa(c.Port()))
}

// Validate names the first bad key. otherPorts are the component's other ports by key (listenPort, ...),
// which the endpoint must not take.
func (c ExporterConfig) Validate(otherPorts map[string]int) error {
	switch t := strings.ToUpper(strings.TrimSpace(c.MetricsExporterType)); t {
	case ExporterDisable, ExporterProm:
	case "OTLP_GRPC", "LOG":
		return fmt.Errorf("config key metricsExporterType: %s is RocketMQ's but not supported here (DISABLE or PROM)", t)
	default:
		return fmt.Errorf("config key metricsExporterType: %q is not DISABLE or PROM", c.MetricsExporterType)
	}
	if c.MetricsPort < 0 || c.MetricsPort > 65535 {
		return fmt.Errorf("config key metricsPort: %d is not a TCP port (0 = not set)", c.MetricsPort)
	}
	if c.MetricsPromExporterPort < 0 || c.MetricsPromExporterPort > 65535 {
		return fmt.Errorf("config key metricsPromExporterPort: %d is not a TCP port (0 = any free port)", c.MetricsPromExporterPort)
	}
	if h := strings.TrimSpace(c.MetricsPromExporterHost); h != "" && net.ParseIP(h) == nil {
		if _, err := net.LookupHost(h); err != nil {
			return fmt.Errorf("config key metricsPromExporterHost: %q is neither an IP address nor a known host name", h)
		}
	}
	if !c.On() || c.Port() == 0 {
		return nil
	}
	for key, p := range otherPorts {
		if p == c.Port() {
			return fmt.Errorf("config key %s: %d is also %s", c.PortKey(), p, key)
		}
	}
	return nil
}

// Describe says where the endpoint listens, or that it is off and how to turn it on, for start-up messages.
func (c ExporterConfig) Describe(boundAddr string) string {
	if !c.On() {
		return fmt.Sprintf("metrics off (metricsExporterType=DISABLE; metricsExporterType=PROM serves them on port %d)", c.Port())
	}
	return "metrics on http://" + boundAddr + Path + " (metricsExporterType=PROM)"
}
