package admin

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// queryCq, cleanExpiredCQ, deleteExpiredCommitLog and cleanUnusedTopic (RocketMQ's queue and broker commands).

// maintenanceResult is what a store maintenance command prints: "success", as RocketMQ's, and per broker the
// broker's own account of what it removed (--json).
type maintenanceResult struct {
	Brokers map[string]string `json:"brokers"` // address -> the broker's remark
}

func (r *maintenanceResult) writeText(w io.Writer) error {
	_, err := io.WriteString(w, "success\n")
	return err
}

func maintenanceCmd(name, desc string, code remoting.RequestCode) *command {
	return &command{name: name, desc: desc, setup: func(f *flags) runFunc {
		var addr, cluster string
		f.String(&addr, "b", "brokerAddr", "Broker address", false)
		f.String(&cluster, "c", "cluster", "clustername (without -b and -c: every broker)", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if addr != "" && cluster != "" {
				return nil, usagef("give only one of -b (--brokerAddr) or -c (--cluster)")
			}
			refs, err := r.targets(ctx, addr, cluster, false)
			if err != nil {
				return nil, err
			}
			res := &maintenanceResult{Brokers: map[string]string{}}
			_, err = eachBroker(refs, func(ref brokerRef) error {
				remark, err := r.c.StoreMaintenance(ctx, ref.addr, code)
				if err == nil {
					res.Brokers[ref.addr] = remark
				}
				return err
			})
			return res, err
		}
	}}
}

func cleanExpiredCQCmd() *command {
	return maintenanceCmd("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", remoting.CleanExpiredConsumeQueue)
}

func deleteExpiredCommitLogCmd() *command {
	return maintenanceCmd("deleteExpiredCommitLog", "Delete expired CommitLog files.", remoting.DeleteExpiredCommitLog)
}

func cleanUnusedTopicCmd() *command {
	return maintenanceCmd("cleanUnusedTopic", "Clean unused topic on broker.", remoting.CleanUnusedTopic)
}

type queryCqResult struct {
	Index int64                                   `json:"index"`
	Body  *protocol.QueryConsumeQueueResponseBody `json:"body"`
}

func (r *queryCqResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	b := r.Body
	if len(b.SubscriptionData) > 0 && string(b.SubscriptionData) != "null" {
		t.printf("Subscription data: \n%s\n", b.SubscriptionData)
		t.printf("======================================\n")
	}
	if b.FilterData != "" {
		t.printf("Filter data: \n%s\n", b.FilterData)
		t.printf("======================================\n")
	}
	t.printf("Queue data: \nmax: %d, min: %d\n", b.MaxQueueIndex, b.MinQueueIndex)
	t.printf("======================================\n")
	for i, d := range b.QueueData {
		t.printf("idx: %d\n", r.Index+int64(i))
		t.printf("ConsumeQueueData{physicOffset=%d, physicSize=%d, tagsCode=%d, extendDataJson='%s', bitMap='%s', eval=%t, msg='%s'}\n",
			d.PhysicOffset, d.PhysicSize, d.TagsCode, orNull(d.ExtendDataJSON), orNull(d.BitMap), d.Eval, orNull(d.Msg))
		t.printf("======================================\n")
	}
	return t.err
}

func queryCqCmd() *command {
	return &command{name: "queryCq", desc: "Query cq command.", setup: func(f *flags) runFunc {
		var topic, addr, group string
		var qid int32
		var index int64
		count := 10
		f.String(&topic, "t", "topic", "topic name", true)
		f.Int32(&qid, "q", "queue", "queue num, ie. 1", true)
		f.Int64(&index, "i", "index", "start queue index.", true)
		f.Int(&count, "c", "count", "how many.", false)
		f.String(&addr, "b", "broker", "broker addr.", false)
		f.String(&group, "g", "consumer", "consumer group.", false)
		return func(ctx context.Context, r *runner) (result, error) {
			if count < 1 || count > 1000 {
				return nil, usagef("option -c (--count) %d is not within 1..1000", count)
			}
			if addr == "" {
				route, err := r.c.Route(ctx, topic)
				if err != nil {
					return nil, err
				}
				refs := routeBrokers(route)
				sort.Slice(refs, func(i, j int) bool { return refs[i].name < refs[j].name })
				for _, bd := range route.BrokerDatas {
					if len(refs) > 0 && bd.BrokerName == refs[0].name {
						addr = bd.BrokerAddrs[protocol.MasterID]
					}
				}
				if addr == "" {
					return nil, fmt.Errorf("No topic route data! topic %s has no master to ask (give -b)", topic)
				}
			}
			body, err := r.c.QueryConsumeQueue(ctx, addr, topic, qid, index, count, group)
			if err != nil {
				return nil, err
			}
			return &queryCqResult{Index: index, Body: body}, nil
		}
	}}
}
