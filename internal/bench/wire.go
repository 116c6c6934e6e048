package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// wire makes the requests mqbench needs of name servers and brokers over a remoting.Client: routes, cluster
// info, topic creation, offsets. The native producer and consumer use its client for their own requests.
type wire struct {
	rc        *remoting.Client
	namesrvs  []string
	timeout   time.Duration
	serialize byte
}

func newWire(c Common, serialize byte, conns int, log *slog.Logger) *wire {
	rc := remoting.NewClient(remoting.ClientConfig{DialTimeout: c.Timeout, ConnsPerAddr: conns},
		log.With("component", "bench-wire"))
	return &wire{rc: rc, namesrvs: c.NamesrvAddrs, timeout: c.Timeout, serialize: serialize}
}

func (w *wire) close() error { return w.rc.Close() }

// request returns a request in the wire's header encoding.
func (w *wire) request(code remoting.RequestCode, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	req.SerializeType = w.serialize
	return req
}

// responseError is a broker or name server answer other than SUCCESS.
type responseError struct {
	code   remoting.RequestCode
	addr   string
	answer remoting.ResponseCode
	remark string
}

func (e *responseError) Error() string {
	return fmt.Sprintf("%s to %s: %s (%d) %s", e.code, e.addr, e.answer, int32(e.answer), e.remark)
}

// callOK sends req to addr, waits at most the wire's timeout, and turns an answer other than SUCCESS into a
// *responseError.
func (w *wire) callOK(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	code := remoting.RequestCode(req.Code)
	resp, err := w.rc.Invoke(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("%s to %s: %w", code, addr, err)
	}
	if resp.Code != int32(remoting.Success) {
		return resp, &responseError{code: code, addr: addr, answer: remoting.ResponseCode(resp.Code), remark: resp.Remark}
	}
	return resp, nil
}

// namesrvJSON asks the name servers in turn until one answers SUCCESS, and decodes its body into out.
func (w *wire) namesrvJSON(ctx context.Context, code remoting.RequestCode, ext map[string]string, out any) error {
	var errs []error
	for _, ns := range w.namesrvs {
		resp, err := w.callOK(ctx, ns, w.request(code, ext, nil))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return fmt.Errorf("%s from %s: decode answer: %w", code, ns, err)
		}
		return nil
	}
	return errors.Join(errs...)
}

func (w *wire) route(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	var r protocol.TopicRouteData
	return &r, w.namesrvJSON(ctx, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, &r)
}

func (w *wire) clusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	var ci protocol.ClusterInfo
	return &ci, w.namesrvJSON(ctx, remoting.GetBrokerClusterInfo, nil, &ci)
}

// queueRef is one message queue and the address of its broker's master.
type queueRef struct {
	broker string
	addr   string
	id     int32
}

func (q queueRef) String() string { return q.broker + "/" + strconv.Itoa(int(q.id)) }

// routeQueues lists the route's write queues (write=true) or read queues, of brokers with a master, ordered by
// broker name and queue id (as the clients do).
func routeQueues(r *protocol.TopicRouteData, write bool) []queueRef {
	masters := map[string]string{}
	for _, bd := range r.BrokerDatas {
		if a := bd.BrokerAddrs[protocol.MasterID]; a != "" {
			masters[bd.BrokerName] = a
		}
	}
	qds := append([]protocol.QueueData(nil), r.QueueDatas...)
	sort.Slice(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
	var out []queueRef
	for _, qd := range qds {
		addr := masters[qd.BrokerName]
		n, perm := qd.ReadQueueNums, int32(protocol.PermRead)
		if write {
			n, perm = qd.WriteQueueNums, protocol.PermWrite
		}
		if addr == "" || qd.Perm&perm == 0 {
			continue
		}
		for id := range n {
			out = append(out, queueRef{broker: qd.BrokerName, addr: addr, id: id})
		}
	}
	return out
}

// ensureTopic creates topic with queues read and write queues on the master of every broker of every cluster
// the name servers know (UPDATE_AND_CREATE_TOPIC), unless the name servers already route it, and waits until
// every name server routes it. It returns the route.
func (w *wire) ensureTopic(ctx context.Context, topic string, queues int, log *slog.Logger) (*protocol.TopicRouteData, error) {
	if r, err := w.route(ctx, topic); err == nil && len(routeQueues(r, true)) > 0 {
		return r, nil
	}
	ci, err := w.clusterInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	var created []string
	for name, bd := range ci.BrokerAddrTable {
		addr := bd.BrokerAddrs[protocol.MasterID]
		if addr == "" {
			continue
		}
		q := strconv.Itoa(queues)
		ext := map[string]string{"topic": topic, "readQueueNums": q, "writeQueueNums": q,
			"perm": strconv.Itoa(protocol.PermRead | protocol.PermWrite), "topicFilterType": "SINGLE_TAG"}
		if _, err := w.callOK(ctx, addr, w.request(remoting.UpdateAndCreateTopic, ext, nil)); err != nil {
			return nil, fmt.Errorf("create topic %s on broker %s: %w", topic, name, err)
		}
		created = append(created, name)
	}
	if len(created) == 0 {
		return nil, fmt.Errorf("create topic %s: the name servers %v know no broker master", topic, w.namesrvs)
	}
	log.Info("topic created", "topic", topic, "queues", queues, "brokers", created)
	return w.waitRoute(ctx, topic, len(created))
}

// waitRoute polls the name servers until each routes topic to brokers brokers (they register a new topic at
// once; the wait covers that round trip) or the wire's timeout passes.
func (w *wire) waitRoute(ctx context.Context, topic string, brokers int) (*protocol.TopicRouteData, error) {
	deadline := time.Now().Add(w.timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var last *protocol.TopicRouteData
		all := true
		for _, ns := range w.namesrvs {
			var r protocol.TopicRouteData
			resp, err := w.callOK(ctx, ns, w.request(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
			if err == nil {
				err = json.Unmarshal(resp.Body, &r)
			}
			if err != nil || len(r.QueueDatas) < brokers {
				all = false
				break
			}
			last = &r
		}
		if all {
			return last, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("topic %s: not routed to %d brokers by every name server within %v", topic, brokers, w.timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// queryOffset asks the broker for group's committed offset of q; found is false on QUERY_NOT_FOUND.
func (w *wire) queryOffset(ctx context.Context, group, topic string, q queueRef) (offset int64, found bool, err error) {
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q.id)), "bname": q.broker}
	resp, err := w.callOK(ctx, q.addr, w.request(remoting.QueryConsumerOffset, ext, nil))
	var re *responseError
	if errors.As(err, &re) && re.answer == remoting.QueryNotFound {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	off, err := resp.ExtInt64("offset")
	return off, err == nil, err
}

// queueOffset asks for the min (GET_MIN_OFFSET) or max (GET_MAX_OFFSET) offset of q.
func (w *wire) queueOffset(ctx context.Context, code remoting.RequestCode, topic string, q queueRef) (int64, error) {
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(int(q.id)), "bname": q.broker}
	resp, err := w.callOK(ctx, q.addr, w.request(code, ext, nil))
	if err != nil {
		return 0, err
	}
	return resp.ExtInt64("offset")
}

// commitOffset stores group's offset of q at the broker (UPDATE_CONSUMER_OFFSET).
func (w *wire) commitOffset(ctx context.Context, group, topic string, q queueRef, offset int64) error {
	ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(q.id)),
		"commitOffset": strconv.FormatInt(offset, 10), "bname": q.broker}
	_, err := w.callOK(ctx, q.addr, w.request(remoting.UpdateConsumerOffset, ext, nil))
	return err
}

// storedCount adds up the max offsets of queues: how many messages the topic's queues hold in all.
func (w *wire) storedCount(ctx context.Context, topic string, queues []queueRef) (int64, error) {
	var sum int64
	for _, q := range queues {
		off, err := w.queueOffset(ctx, remoting.GetMaxOffset, topic, q)
		if err != nil {
			return 0, fmt.Errorf("max offset of %s: %w", q, err)
		}
		sum += off
	}
	return sum, nil
}

// waitStored polls storedCount until it reaches want, or has not grown for the wire's timeout, and returns the
// last count. Dispatch to the consume queues runs behind the store, so a just-stored message shows a moment
// later.
func (w *wire) waitStored(ctx context.Context, topic string, queues []queueRef, want int64, log *slog.Logger) int64 {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last int64 = -1
	grew := time.Now()
	for {
		n, err := w.storedCount(ctx, topic, queues)
		if err != nil {
			log.Warn("count stored messages", "topic", topic, "err", err)
			return max(last, 0)
		}
		if n >= want {
			return n
		}
		if n > last {
			last, grew = n, time.Now()
		}
		if time.Since(grew) > w.timeout {
			log.Warn("oneway sends not stored", "topic", topic, "stored", n, "want", want)
			return n
		}
		select {
		case <-ctx.Done():
			return n
		case <-tick.C:
		}
	}
}

// runtimeInfo asks the broker at addr for its runtime table (GET_BROKER_RUNTIME_INFO).
func (w *wire) runtimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := w.callOK(ctx, addr, w.request(remoting.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &kv); err != nil {
		return nil, fmt.Errorf("%s from %s: decode answer: %w", remoting.GetBrokerRuntimeInfo, addr, err)
	}
	return kv.Table, nil
}

// waitDispatched polls the brokers of queues until none has CommitLog bytes left to dispatch
// (dispatchBehindBytes 0), so that queue offsets count every message stored so far; at most the wire's
// timeout.
func (w *wire) waitDispatched(ctx context.Context, queues []queueRef) error {
	addrs := map[string]bool{}
	for _, q := range queues {
		addrs[q.addr] = true
	}
	deadline := time.Now().Add(w.timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for addr := range addrs {
		for {
			t, err := w.runtimeInfo(ctx, addr)
			if err != nil {
				return err
			}
			if t["dispatchBehindBytes"] == "0" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("broker %s: %s bytes still to dispatch after %v", addr, t["dispatchBehindBytes"], w.timeout)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
		}
	}
	return nil
}
