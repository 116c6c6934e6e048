package console

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func TestSamplerHistory(t *testing.T) {
	src := newFakeSource()
	s := newTestServer(t, src) // History one minute
	ctx := context.Background()
	t0 := time.UnixMilli(1_700_000_000_000)
	s.sampler.sample(ctx, t0)
	src.set(func(f *fakeSource) {
		f.brokers[0].InTPS = 40
		f.groups[0].Lag = 2
	})
	s.sampler.sample(ctx, t0.Add(time.Second))
	tps, lag := s.hist.snapshot("")
	if len(tps) != 2 || len(tps[0].Points) != 2 || tps[0].Points[1] != (TPSPoint{T: t0.Add(time.Second).UnixMilli(), In: 40, Out: 3}) {
		t.Fatalf("tps history: %+v", tps)
	}
	if tps[0].BrokerID != 0 || tps[1].BrokerID != 1 {
		t.Fatalf("tps order: %+v", tps)
	}
	if len(lag) != 1 || lag[0].Group != "G1" || len(lag[0].Points) != 2 || lag[0].Points[0].Lag != 4 || lag[0].Points[1].Lag != 2 {
		t.Fatalf("lag history: %+v", lag)
	}

	// A group whose page was opened is followed too, though the group list does not have it.
	s.sampler.watch("Offline", t0.Add(time.Second))
	s.sampler.sample(ctx, t0.Add(2*time.Second))
	if _, lag := s.hist.snapshot("Offline"); len(lag) != 1 || lag[0].Points[0].Lag != 9 {
		t.Fatalf("watched group: %+v", lag)
	}
	// Points older than the window go, and so do series left empty; a broker gone is no longer drawn.
	src.set(func(f *fakeSource) { f.brokers = f.brokers[:1] })
	s.sampler.sample(ctx, t0.Add(62*time.Second+time.Millisecond))
	tps, lag = s.hist.snapshot("")
	if len(tps) != 1 || len(tps[0].Points) != 1 {
		t.Fatalf("after the window, tps: %+v", tps)
	}
	// The watch of Offline ended with the window, and its points left it: only G1 is drawn.
	if len(lag) != 1 || lag[0].Group != "G1" || len(lag[0].Points) != 1 {
		t.Fatalf("after the window, lag: %+v", lag)
	}

	var h historyBody
	call(t, s, get("/api/history?group=G1"), http.StatusOK, &h)
	if h.IntervalMs != 1000 || h.WindowMs != 60_000 || len(h.Lag) != 1 || h.Lag[0].Group != "G1" || len(h.TPS) != 1 {
		t.Fatalf("history body: %+v", h)
	}
	// A failing sample leaves no point and keeps the sampler going.
	src.set(func(f *fakeSource) { f.err = context.DeadlineExceeded })
	s.sampler.sample(ctx, t0.Add(63*time.Second))
	if tps, _ := s.hist.snapshot(""); len(tps[0].Points) != 1 {
		t.Fatalf("failed sample added points: %+v", tps)
	}
}

// TestServeAndClose runs the server on a real listener: the sampler fills the history by itself, and Close
// cancels a request that waits on the cluster instead of waiting for it.
func TestServeAndClose(t *testing.T) {
	src := newFakeSource()
	s, err := New(Config{Listen: "127.0.0.1:0", Source: src, SampleInterval: 20 * time.Millisecond, History: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr()
	getJSON := func(path string, out any) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var h historyBody
		if getJSON("/api/history", &h) != 200 {
			t.Fatal("history")
		}
		if len(h.TPS) == 2 && len(h.TPS[0].Points) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sampler took fewer than 3 samples in 10 s: %+v", h)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A request stuck at the cluster: Close must cancel it, answer it and return.
	blocked := make(chan struct{})
	src.set(func(f *fakeSource) { f.blockBrokers = blocked })
	s.sampler.brokerCache.set(time.Time{}, nil) // force the next page to ask the source
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/api/cluster")
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-blocked
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if code := <-answered; code != http.StatusBadGateway && code != http.StatusGatewayTimeout && code != -1 {
		t.Fatalf("the request in flight at Close got %d", code)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := http.Get(base + "/api/config"); err == nil {
		t.Fatal("the server still answers after Close")
	}
}

func TestStartNamesListen(t *testing.T) {
	s := newTestServer(t, newFakeSource())
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s2, err := New(Config{Listen: s.Addr(), Source: newFakeSource(), SampleInterval: time.Second, History: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(); err == nil {
		s2.Close()
		t.Fatal("two servers on one address")
	} else if want := "--listen " + s.Addr(); len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Fatalf("error %q does not name --listen", err)
	}
	if err := s2.Close(); err != nil { // never started: nothing to close
		t.Fatal(err)
	}
}
