package broker

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// registerResult is what the name servers told a registration.
type registerResult struct {
	masterAddr   string
	haServerAddr string
}

// registerAll registers this broker with every name server in parallel, as RocketMQ's BrokerOuterAPI does,
// and returns what the first successful answer said. Failures are logged; the next period retries.
func (b *Broker) registerAll(ctx context.Context) (registerResult, error) {
	topics := b.topics.snapshot()
	if perm := b.permission(); perm&protocol.PermRead == 0 || perm&protocol.PermWrite == 0 {
		// A broker that may not be read or written advertises its permission on every topic, so clients
		// route around it instead of finding out from refused requests (as RocketMQ's registerBrokerAll).
		for _, tc := range topics.TopicConfigTable {
			tc.Perm = perm
		}
	}
	body, err := json.Marshal(protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: topics, FilterServerList: []string{}})
	if err != nil {
		return registerResult{}, err
	}
	id := b.registrationID()       // raft_role.go
	addr := b.registrationAddr(id) // raft_vip.go: the master's virtual address, if any
	ext := map[string]string{
		"brokerName":   b.cfg.BrokerName,
		"brokerAddr":   addr,
		"clusterName":  b.cfg.BrokerClusterName,
		"haServerAddr": b.haAddr,
		"brokerId":     itoa(id),
		"compressed":   "false",
		"bodyCrc32":    itoa(int64(crc32.ChecksumIEEE(body) & 0x7fffffff)),
	}
	if b.cfg.raftMode() && b.raft.node != nil {
		// The name server orders master registrations by term and routes a stand-in master while a
		// group elects (namesrv/raftgroup.go); RocketMQ's name server ignores both fields.
		ext["raftTerm"] = itoa(int64(b.raft.node.Status().Term))
		ext["raftSlaveId"] = itoa(b.raft.slaveID)
	}
	timeout := ms(b.cfg.RegisterBrokerTimeoutMills)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first *registerResult
		last  error
	)
	for _, ns := range b.cfg.NamesrvAddrs() {
		wg.Add(1)
		go func(ns string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			req := remoting.NewRequest(remoting.RegisterBroker, copyMap(ext), body)
			resp, err := b.nsClient.Invoke(cctx, ns, req)
			if err == nil && resp.Code != int32(remoting.Success) {
				err = &remoteError{code: resp.Code, remark: resp.Remark}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				last = err
				b.log.Warn("register broker with name server failed", "namesrv", ns, "err", err)
				return
			}
			if first == nil {
				first = &registerResult{masterAddr: resp.OptString("masterAddr", ""), haServerAddr: resp.OptString("haServerAddr", "")}
			}
		}(ns)
	}
	wg.Wait()
	if first == nil {
		return registerResult{}, last
	}
	b.afterRegistration(ctx, id, addr) // raft_vip.go
	return *first, nil
}

// unregisterAll tells every name server this broker is going away (ordered shutdown, first step).
func (b *Broker) unregisterAll(ctx context.Context) {
	ext := map[string]string{"brokerName": b.cfg.BrokerName, "brokerAddr": b.addr,
		"clusterName": b.cfg.BrokerClusterName, "brokerId": itoa(b.brokerID())}
	var wg sync.WaitGroup
	for _, ns := range b.cfg.NamesrvAddrs() {
		wg.Add(1)
		go func(ns string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := b.nsClient.Invoke(cctx, ns, remoting.NewRequest(remoting.UnregisterBroker, copyMap(ext), nil)); err != nil {
				b.log.Warn("unregister broker from name server failed", "namesrv", ns, "err", err)
			}
		}(ns)
	}
	wg.Wait()
}

// registerLoop registers at start, every registerNameServerPeriod, and soon after each topic change.
func (b *Broker) registerLoop() {
	defer b.wg.Done()
	period := ms(b.cfg.RegisterNameServerPeriod)
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), ms(b.cfg.RegisterBrokerTimeoutMills)+time.Second)
		if res, err := b.registerAll(ctx); err == nil {
			b.onRegistered(res)
		}
		cancel()
		select {
		case <-b.stop:
			return
		case <-ticker.C:
		case <-b.registerWake:
		}
	}
}

// onRegistered notes what the name servers answered (slaves learn their master here).
func (b *Broker) onRegistered(res registerResult) {
	b.mu.Lock()
	changed := b.masterAddr != res.masterAddr
	b.masterAddr = res.masterAddr
	b.masterHAAddr = res.haServerAddr
	b.mu.Unlock()
	b.haRegistered(res, changed)
}

// triggerRegister asks the register loop to register now (after a topic change).
func (b *Broker) triggerRegister() {
	select {
	case b.registerWake <- struct{}{}:
	default:
	}
}

type remoteError struct {
	code   int32
	remark string
}

func (e *remoteError) Error() string {
	return "code " + remoting.ResponseCode(e.code).String() + ": " + e.remark
}

func copyMap(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
