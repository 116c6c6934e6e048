package namesrv

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// BenchmarkRouteQuery: GET_ROUTEINFO_BY_TOPIC over loopback from 16 callers sharing one connection, with 100
// topics on 2 broker names (a master and a slave each).
func BenchmarkRouteQuery(b *testing.B) {
	cfg := DefaultConfig()
	cfg.ListenAddr, cfg.ListenPort, cfg.MetricsPort = "127.0.0.1", 0, 0
	cfg.KvConfigPath = filepath.Join(b.TempDir(), "kvConfig.json")
	ns, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	if err := ns.Start(); err != nil {
		b.Fatal(err)
	}
	defer ns.Close()
	names := make([]string, 100)
	for i := range names {
		names[i] = "Topic" + string(rune('A'+i%26)) + string(rune('a'+i/26))
	}
	for _, br := range []broker{
		{cluster: "c", name: "broker-a", addr: "10.0.0.5:10911", topics: topicsOf(names...), version: 1},
		{cluster: "c", name: "broker-a", addr: "10.0.0.6:10911", id: 1},
		{cluster: "c", name: "broker-b", addr: "10.0.0.7:10911", topics: topicsOf(names...), version: 1},
	} {
		ns.Routes().RegisterBroker(regReq(br, 0, 0), time.Now())
	}
	cl := remoting.NewClient(remoting.ClientConfig{}, slog.New(slog.DiscardHandler))
	defer cl.Close()
	addr := ns.Addr()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			req := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": names[i%len(names)]}, nil)
			resp, err := cl.Invoke(context.Background(), addr, req)
			if err != nil || resp.Code != int32(remoting.Success) {
				b.Errorf("route: %v %v", resp, err)
				return
			}
		}
	})
}
