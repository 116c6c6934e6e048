package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/rocketraft/rocketraft/remoting"
)

// The stand-in answers what the simulator asks at once: GET_ROUTEINFO_BY_TOPIC with a complete route of
// the topic encoded once up front (the same groups and addresses, so answers of the name server's size),
// REGISTER_BROKER, BROKER_HEARTBEAT and anything else with SUCCESS. One goroutine per connection reads a
// frame and writes its answer, nothing in between: what the simulator measures against it is its own
// floor, the generator and the machine, with the same connections, rate and registrations as the run
// against the name server. mqbench starts it as a process of its own (mqbench namesrv-standin), pinned
// where the name server will be.

// StandInArgs are the flags that give the stand-in the fleet's shape.
func StandInArgs(c FleetConfig) []string {
	return []string{"--groups", strconv.Itoa(c.Groups), "--replicas", strconv.Itoa(c.Replicas), "--topics",
		strconv.Itoa(c.Topics), "--spread", strconv.Itoa(c.Spread), "--queues", strconv.Itoa(c.Queues),
		"--cluster", c.Cluster}
}

// ServeStandIn listens on 127.0.0.1 (a free port), prints the address as one line to out, and answers
// until in ends (its parent closed it or ended) or ctx does.
func ServeStandIn(ctx context.Context, cfg FleetConfig, in io.Reader, out io.Writer) error {
	f := newFleet(cfg)
	bodies := make(map[string][]byte, len(f.topics))
	sets := make([][]byte, cfg.Groups/cfg.Spread)
	for s := range sets {
		b, err := json.Marshal(f.expectedRoute(s))
		if err != nil {
			return err
		}
		sets[s] = b
	}
	for i, t := range f.topics {
		bodies[t] = sets[f.topicSet[i]]
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	if _, err := fmt.Fprintln(out, ln.Addr().String()); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	stop := context.AfterFunc(ctx, func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			standInConn(c, bodies)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			_ = c.Close()
		}()
	}
}

// standInConn answers every request of c as it comes.
func standInConn(c net.Conn, bodies map[string][]byte) {
	br := bufio.NewReaderSize(c, 16<<10)
	var scratch, out []byte
	for {
		frame, err := remoting.ReadFrame(br, remoting.MaxFrameSize, scratch)
		if err != nil {
			return
		}
		if cap(frame) > cap(scratch) {
			scratch = frame[:0]
		}
		req, err := remoting.DecodeFrame(frame)
		if err != nil {
			return
		}
		if req.IsResponse() || req.IsOneway() {
			continue
		}
		resp := remoting.Command{Code: int32(remoting.Success), Language: remoting.LanguageGoName,
			Version: remoting.CurrentVersion, Opaque: req.Opaque, Flag: remoting.FlagResponse,
			SerializeType: req.SerializeType}
		if req.Code == int32(remoting.GetRouteInfoByTopic) {
			if b, ok := bodies[req.ExtFields["topic"]]; ok {
				resp.Body = b
			} else {
				resp.Code = int32(remoting.TopicNotExist)
			}
		}
		if out, err = remoting.EncodeFrame(out[:0], &resp); err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
