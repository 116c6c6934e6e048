package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
)

// updateTopicPerm, topicClusterList and updateOrderConf (RocketMQ's tools/command/topic).

type updateTopicPermResult struct {
	Brokers     []string             `json:"brokers"`
	OldPerm     int32                `json:"oldPerm"`
	TopicConfig protocol.TopicConfig `json:"topicConfig"`
	unchanged   bool
}

func (r *updateTopicPermResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	if r.unchanged {
		t.printf("new perm equals to the old one!\n")
		return t.err
	}
	for _, a := range r.Brokers {
		t.printf("update topic perm from %d to %d in %s success.\n", r.OldPerm, r.TopicConfig.Perm, a)
	}
	t.printf("%s.\n", topicConfigText(&r.TopicConfig))
	return t.err
}

func updateTopicPermCmd() *command {
	return &command{name: "updateTopicPerm", desc: "Update topic perm.", setup: func(f *flags) runFunc {
		var topic string
		var perm int32
		target := chooseBrokers(f, "create topic to which broker", "create topic to which cluster")
		f.String(&topic, "t", "topic", "topic name", true)
		f.Int32(&perm, "p", "perm", "set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]", true)
		return func(ctx context.Context, r *runner) (result, error) {
			if perm&^(protocol.PermRead|protocol.PermWrite|protocol.PermInherit) != 0 {
				return nil, usagef("option -p (--perm) %d is not 2, 4 or 6 (2:W 4:R 6:RW, 1 inherit)", perm)
			}
			if err := f.oneOf("brokerAddr", "clusterName"); err != nil {
				return nil, err
			}
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			queues := map[string]protocol.QueueData{}
			for _, qd := range route.QueueDatas {
				queues[qd.BrokerName] = qd
			}
			var refs []brokerRef
			if target.addr != "" {
				for _, bd := range route.BrokerDatas {
					if bd.BrokerAddrs[protocol.MasterID] == target.addr {
						refs = append(refs, brokerRef{name: bd.BrokerName, addr: target.addr})
					}
				}
				if len(refs) == 0 {
					return nil, fmt.Errorf("updateTopicPerm error broker not exit or broker is not master: no master at %s serves topic %s", target.addr, topic)
				}
			} else {
				masters, err := r.targets(ctx, "", target.cluster, true)
				if err != nil {
					return nil, err
				}
				for _, m := range masters {
					if _, ok := queues[m.name]; ok {
						refs = append(refs, m)
					}
				}
				if len(refs) == 0 {
					return nil, fmt.Errorf("no master of cluster %s serves topic %s", target.cluster, topic)
				}
			}
			first := queues[refs[0].name]
			res := &updateTopicPermResult{OldPerm: first.Perm, TopicConfig: protocol.TopicConfig{TopicName: topic,
				ReadQueueNums: first.ReadQueueNums, WriteQueueNums: first.WriteQueueNums, Perm: perm,
				TopicFilterType: "SINGLE_TAG", TopicSysFlag: first.TopicSysFlag}}
			if target.addr != "" && first.Perm == perm {
				res.unchanged = true
				return res, nil
			}
			res.Brokers, err = eachBroker(refs, func(ref brokerRef) error {
				qd := queues[ref.name]
				tc := res.TopicConfig
				tc.ReadQueueNums, tc.WriteQueueNums, tc.TopicSysFlag = qd.ReadQueueNums, qd.WriteQueueNums, qd.TopicSysFlag
				return r.c.CreateTopic(ctx, ref.addr, &tc)
			})
			return res, err
		}
	}}
}

type topicClusterResult struct {
	Clusters []string `json:"clusters"`
}

func (r *topicClusterResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, c := range r.Clusters {
		t.printf("%s\n", c)
	}
	return t.err
}

func topicClusterListCmd() *command {
	return &command{name: "topicClusterList", desc: "Get cluster info for topic.", setup: func(f *flags) runFunc {
		var topic string
		f.String(&topic, "t", "topic", "topic name", true)
		return func(ctx context.Context, r *runner) (result, error) {
			route, err := r.c.Route(ctx, topic)
			if err != nil {
				return nil, err
			}
			seen := map[string]bool{}
			res := &topicClusterResult{Clusters: []string{}}
			for _, bd := range route.BrokerDatas {
				if !seen[bd.Cluster] {
					seen[bd.Cluster] = true
					res.Clusters = append(res.Clusters, bd.Cluster)
				}
			}
			sort.Strings(res.Clusters)
			return res, nil
		}
	}}
}

type orderConfResult struct {
	Topic     string `json:"topic"`
	OrderConf string `json:"orderConf"`
	Found     bool   `json:"found"`
	text      string
}

func (r *orderConfResult) writeText(w io.Writer) error {
	_, err := io.WriteString(w, r.text+"\n")
	return err
}

// checkOrderConf checks "brokerName:num;brokerName:num", naming the bad part.
func checkOrderConf(conf string) error {
	for _, part := range strings.Split(conf, ";") {
		name, num, ok := strings.Cut(part, ":")
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if !ok || strings.TrimSpace(name) == "" || err != nil || n <= 0 {
			return usagef("option -v (--orderConf): %q is not brokerName:queueNums (eg. broker-a:4;broker-b:4)", part)
		}
	}
	return nil
}

func updateOrderConfCmd() *command {
	return &command{name: "updateOrderConf", desc: "Create or update or delete order conf.", setup: func(f *flags) runFunc {
		var topic, conf, method string
		f.String(&topic, "t", "topic", "topic name", true)
		f.String(&conf, "v", "orderConf", "set order conf [eg. brokerName1:num;brokerName2:num]", false)
		f.String(&method, "m", "method", "option type [eg. put|get|delete", true)
		return func(ctx context.Context, r *runner) (result, error) {
			res := &orderConfResult{Topic: topic}
			switch method {
			case "get":
				var errs []error
				for _, ns := range r.c.Namesrvs() {
					v, found, err := r.c.KVConfig(ctx, ns, orderTopicNamespace, topic)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					res.OrderConf, res.Found = v, found
					res.text = fmt.Sprintf("get orderConf success. topic=[%s], orderConf=[%s] ", topic, v)
					if !found {
						res.text = fmt.Sprintf("get orderConf success. topic=[%s], orderConf=[null] ", topic)
					}
					return res, nil
				}
				if len(errs) == 0 {
					return nil, errNoNamesrv
				}
				return nil, errors.Join(errs...)
			case "put":
				if strings.TrimSpace(conf) == "" {
					return nil, usagef("please set orderConf with option -v.")
				}
				if err := checkOrderConf(conf); err != nil {
					return nil, err
				}
				res.OrderConf, res.Found = conf, true
				res.text = fmt.Sprintf("update orderConf success. topic=[%s], orderConf=[%s]", topic, conf)
				return res, r.eachNamesrv(func(ns string) error { return r.c.PutKVConfig(ctx, ns, orderTopicNamespace, topic, conf) })
			case "delete":
				res.text = fmt.Sprintf("delete orderConf success. topic=[%s]", topic)
				return res, r.eachNamesrv(func(ns string) error { return r.c.DeleteKVConfig(ctx, ns, orderTopicNamespace, topic) })
			}
			return nil, usagef("option -m (--method) %q is not put, get or delete", method)
		}
	}}
}
