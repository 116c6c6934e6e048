package broker

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// registerResult is what the name servers told a registration, and what it registered.
type registerResult struct {
	masterAddr   string
	haServerAddr string

	id   int64  // the brokerId registered
	addr string // the brokerAddr registered
}

// registerAll registers this broker with every name server in parallel, as RocketMQ's BrokerOuterAPI does,
// and returns what the first successful answer said and whether every name server took it. topics is
// what the body carries: the whole table (a full registration), or only the topics changed since the
// last round with the version counting them (an incremental one, RocketMQ's registerIncrementBrokerData;
// the name server merges it, since its version moved). Failures are logged; the next round retries.
func (b *Broker) registerAll(ctx context.Context, topics protocol.TopicConfigSerializeWrapper) (registerResult, bool, error) {
	if perm := b.permission(); perm&protocol.PermRead == 0 || perm&protocol.PermWrite == 0 {
		// A broker that may not be read or written advertises its permission on every topic, so clients
		// route around it instead of finding out from refused requests (as RocketMQ's registerBrokerAll).
		for _, tc := range topics.TopicConfigTable {
			tc.Perm = perm
		}
	}
	body, compressed, err := registerBody(topics, b.cfg.CompressedRegister)
	if err != nil {
		return registerResult{}, false, err
	}
	id, addr, roleExt := b.role.registration() // raft_role.go: the master's virtual address, if any
	ext := map[string]string{
		"brokerName":   b.cfg.BrokerName,
		"brokerAddr":   addr,
		"clusterName":  b.cfg.BrokerClusterName,
		"haServerAddr": b.haAddr,
		"brokerId":     itoa(id),
		"compressed":   strconv.FormatBool(compressed),
		"bodyCrc32":    itoa(int64(crc32.ChecksumIEEE(body) & 0x7fffffff)),
	}
	maps.Copy(ext, roleExt)
	timeout := ms(b.cfg.RegisterBrokerTimeoutMills)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		first  *registerResult
		last   error
		failed int
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
				failed++
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
		return registerResult{}, false, last
	}
	first.id, first.addr = id, addr
	return *first, failed == 0, nil
}

// registerBody encodes REGISTER_BROKER's body: compressed (RegisterBrokerBody.encode(true), zlib; a
// table of 10,000 topics goes from 1.6 MB of JSON to 29 KB) when asked and no topic has a
// topicSysFlag, which the compressed form does not carry; JSON otherwise. It says which it chose.
func registerBody(topics protocol.TopicConfigSerializeWrapper, compress bool) ([]byte, bool, error) {
	rb := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: topics, FilterServerList: []string{}}
	for _, tc := range topics.TopicConfigTable {
		if tc != nil && tc.TopicSysFlag != 0 {
			compress = false
			break
		}
	}
	if compress {
		body, err := protocol.EncodeRegisterBrokerBodyCompressed(rb)
		return body, true, err
	}
	body, err := json.Marshal(rb)
	return body, false, err
}

// unregisterAll tells every name server this broker is going away (ordered shutdown, first step).
func (b *Broker) unregisterAll(ctx context.Context) {
	ext := map[string]string{"brokerName": b.cfg.BrokerName, "brokerAddr": b.addr,
		"clusterName": b.cfg.BrokerClusterName, "brokerId": itoa(b.role.brokerID())}
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

// registerState coalesces registrations: every change asks for a round, the register loop runs one round
// for all the changes asked so far, and a caller may wait until a round that started after its change is
// over (topic creation through the admin API answers once the name servers route the topic, as RocketMQ's
// updateAndCreateTopic, which registers before it answers).
type registerState struct {
	mu       sync.Mutex
	asked    uint64        // rounds asked for; guarded by mu
	done     uint64        // asked's value when the last finished round started; guarded by mu
	full     bool          // the next round sends the whole table; guarded by mu
	finished chan struct{} // closed and replaced when a round finishes; guarded by mu
}

// registerLoop registers at start and every registerNameServerPeriod with the whole topic table, and
// soon after each topic change with the changed topics only: 1,000 topics created one after the other
// used to send 1,000 whole tables (500,000 topic entries), and the creator waited up to a poll period
// each time for the route.
func (b *Broker) registerLoop() {
	defer b.wg.Done()
	period := ms(b.cfg.RegisterNameServerPeriod)
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	full := true
	for {
		ctx, cancel := context.WithTimeout(context.Background(), ms(b.cfg.RegisterBrokerTimeoutMills)+time.Second)
		b.registerRound(ctx, full)
		cancel()
		full = false
		select {
		case <-b.stop:
			return
		case <-ticker.C:
			full = true
		case <-b.registerWake:
		}
	}
}

// registerRound runs one registration: the whole table when full (or asked for by triggerRegister, or a
// topic was removed, or the last round failed somewhere), else the topics changed since the last round,
// if any.
func (b *Broker) registerRound(ctx context.Context, full bool) {
	r := &b.reg
	r.mu.Lock()
	gen := r.asked
	full = full || r.full
	r.full = false
	r.mu.Unlock()

	changes, version, dropped := b.topics.takeChanges()
	var topics protocol.TopicConfigSerializeWrapper
	switch {
	case full || dropped:
		topics = b.topics.snapshot()
	case len(changes) > 0:
		topics = protocol.TopicConfigSerializeWrapper{TopicConfigTable: changes, DataVersion: version}
	}
	ok := true
	if topics.TopicConfigTable != nil {
		res, all, err := b.registerAll(ctx, topics)
		if err == nil {
			b.onRegistered(ctx, res)
		}
		// A name server that missed an incremental round would take a later one's version without
		// its topics, and then skip the whole table at that version: the next round sends it all.
		ok = err == nil && all
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	r.full = r.full || !ok
	r.done = max(r.done, gen)
	if r.finished != nil {
		close(r.finished)
	}
	r.finished = make(chan struct{})
}

// onRegistered notes what the name servers answered and tells the role (slaves learn their master here).
func (b *Broker) onRegistered(ctx context.Context, res registerResult) {
	b.mu.Lock()
	changed := b.masterAddr != res.masterAddr
	b.masterAddr = res.masterAddr
	b.masterHAAddr = res.haServerAddr
	b.mu.Unlock()
	b.role.registered(ctx, res, changed)
}

// triggerRegister asks the register loop for a round with the whole table now (role or permission
// changes, a replaced table).
func (b *Broker) triggerRegister() {
	b.reg.mu.Lock()
	b.reg.full = true
	b.reg.mu.Unlock()
	b.topicsChanged()
}

// topicsChanged asks the register loop for a round with the changed topics (topicConfigManager.onChange).
func (b *Broker) topicsChanged() {
	b.reg.mu.Lock()
	b.reg.asked++
	b.reg.mu.Unlock()
	select {
	case b.registerWake <- struct{}{}:
	default:
	}
}

// waitRegistered waits until a registration round asked for after every change made so far has finished
// (successful or not: the next rounds retry), or ctx ends, or the broker stops.
func (b *Broker) waitRegistered(ctx context.Context) {
	r := &b.reg
	r.mu.Lock()
	want := r.asked
	for r.done < want {
		if r.finished == nil {
			r.finished = make(chan struct{})
		}
		ch := r.finished
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-b.stop:
			return
		}
		r.mu.Lock()
	}
	r.mu.Unlock()
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
