package namesrv

import (
	"context"
	"encoding/json"
	"fmt"
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

// BenchmarkRouteRebuild: a stale route answer built again (as after a master change, for each of its
// topics), for a topic on 2 broker names of a master and two slaves each and on 100 of them: written
// from the tables (what RouteAnswer does) against PickupTopicRouteData encoded by encoding/json (what
// it did before), in the same run.
func BenchmarkRouteRebuild(b *testing.B) {
	for _, groups := range []int{2, 100} {
		m := NewRouteInfoManager(2*time.Minute, false, slog.New(slog.DiscardHandler))
		for g := range groups {
			name := fmt.Sprintf("fleet-%04d", g)
			for id := range 3 {
				br := broker{cluster: "FleetCluster", name: name, addr: fmt.Sprintf("10.1.%d.%d:10911", g/200, g%200+id), id: int64(id)}
				if id == 0 {
					br.topics, br.version = topicsOf("WideTopic"), 1
				}
				m.RegisterBroker(regReq(br, 0, 0), time.Now())
			}
		}
		v, _ := m.routes.Load("WideTopic")
		e := v.(*topicEntry)
		b.Run(fmt.Sprintf("groups=%d/tables", groups), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.ver.Add(1) // stale
				if _, ok := m.RouteAnswer("WideTopic"); !ok {
					b.Fatal("no route")
				}
			}
		})
		b.Run(fmt.Sprintf("groups=%d/encoding-json", groups), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				route, ok := m.PickupTopicRouteData("WideTopic")
				if _, err := json.Marshal(route); err != nil || !ok {
					b.Fatal(err, ok)
				}
			}
		})
	}
}
