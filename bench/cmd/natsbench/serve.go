package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// serveConfig is natsbench serve's flags.
type serveConfig struct {
	dir      string
	servers  int
	sync     string // "always" or "default"
	portFile string
}

func (c *serveConfig) validate() error {
	var errs []error
	if c.dir == "" {
		errs = append(errs, errors.New("--dir: no store folder given"))
	}
	if c.servers != 1 && c.servers != 3 {
		errs = append(errs, fmt.Errorf("--servers: %d is neither 1 nor 3", c.servers))
	}
	if c.sync != "always" && c.sync != "default" {
		errs = append(errs, fmt.Errorf("--sync: %q is neither always nor default", c.sync))
	}
	return errors.Join(errs...)
}

func serve(ctx context.Context, argv []string, stderr io.Writer) int {
	cfg := serveConfig{servers: 1, sync: "default"}
	fs := flag.NewFlagSet("natsbench serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.dir, "dir", "", "JetStream store folder (one sub-folder per server)")
	fs.IntVar(&cfg.servers, "servers", 1, "1, or 3 clustered on 127.0.0.1")
	fs.StringVar(&cfg.sync, "sync", "default", "always (sync_interval: always, fsync per write) or default (fsync every 2 min)")
	fs.StringVar(&cfg.portFile, "port-file", "", "write the client URLs here (comma-separated) once ready")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintf(stderr, "natsbench serve: %v\n", err)
		return 2
	}
	servers, err := startServers(cfg)
	defer func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}()
	if err != nil {
		fmt.Fprintf(stderr, "natsbench serve: %v\n", err)
		return 1
	}
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	if cfg.portFile != "" {
		// Written then renamed, so a reader never sees half a file.
		tmp := cfg.portFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strings.Join(urls, ",")+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "natsbench serve: %v\n", err)
			return 1
		}
		if err := os.Rename(tmp, cfg.portFile); err != nil {
			fmt.Fprintf(stderr, "natsbench serve: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "natsbench serve: %d server(s) ready at %s, sync %s\n", len(servers), strings.Join(urls, ","), cfg.sync)
	<-ctx.Done()
	return 0
}

// startServers starts cfg.servers servers on free 127.0.0.1 ports, clustered when there are three, and waits
// until each accepts clients. It returns the servers started so far with any error.
func startServers(cfg serveConfig) ([]*server.Server, error) {
	n := cfg.servers
	clientPorts, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	var routePorts []int
	var routes []*url.URL
	if n > 1 {
		if routePorts, err = freePorts(n); err != nil {
			return nil, err
		}
		for _, p := range routePorts {
			routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
		}
	}
	var out []*server.Server
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       clientPorts[i],
			JetStream:  true,
			StoreDir:   filepath.Join(cfg.dir, fmt.Sprintf("n%d", i+1)),
			NoSigs:     true,
			NoLog:      true,
		}
		if cfg.sync == "always" {
			o.SyncAlways = true
		}
		if n > 1 {
			o.Cluster = server.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: routePorts[i]}
			o.Routes = routes
		}
		s, err := server.NewServer(o)
		if err != nil {
			return out, fmt.Errorf("server n%d: %w", i+1, err)
		}
		out = append(out, s)
		s.Start()
	}
	for _, s := range out {
		if !s.ReadyForConnections(30 * time.Second) {
			return out, fmt.Errorf("server %s not ready within 30 s", s.Name())
		}
	}
	return out, nil
}

// freePorts returns n distinct TCP ports free on 127.0.0.1 at the time of the call.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
