package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/remoting"
)

// The keys of GET_BROKER_RUNTIME_INFO that rocketmq-exporter's BrokerRuntimeStats reads, by how it parses
// them (Long.parseLong, Double.parseDouble, Integer.parseInt, or a text it splits). A key it reads that is
// missing, or a value that does not parse, makes the exporter drop every rocketmq_brokeruntime_* series.
var (
	exporterLongKeys = []string{"msgPutTotalTodayNow", "sendThreadPoolQueueHeadWaitTimeMills",
		"queryThreadPoolQueueHeadWaitTimeMills", "msgGetTotalTodayNow", "queryThreadPoolQueueSize", "bootTimestamp",
		"msgPutTotalYesterdayMorning", "msgGetTotalYesterdayMorning", "pullThreadPoolQueueSize", "commitLogMinOffset",
		"pullThreadPoolQueueHeadWaitTimeMills", "dispatchMaxBuffer", "pageCacheLockTimeMills", "commitLogMaxOffset",
		"getMessageEntireTimeMax", "msgPutTotalTodayMorning", "putMessageTimesTotal", "msgGetTotalTodayMorning",
		"sendThreadPoolQueueSize", "startAcceptSendRequestTimeStamp", "putMessageEntireTimeMax",
		"earliestMessageTimeStamp", "remainTransientStoreBufferNumbs", "queryThreadPoolQueueCapacity",
		"dispatchBehindBytes", "putMessageSizeTotal", "sendThreadPoolQueueCapacity", "pullThreadPoolQueueCapacity"}
	exporterDoubleKeys = []string{"consumeQueueDiskRatio", "commitLogDiskRatio", "putMessageAverageSize",
		"putLatency99", "putLatency999"}
	exporterIntKeys  = []string{"brokerVersion"}
	exporterTPSKeys  = []string{"putTps", "getMissTps", "getTransferedTps", "getTotalTps", "getFoundTps"}
	exporterTextKeys = []string{"runtime", "brokerVersionDesc"}
)

// parseExporterRuntime reads table the way rocketmq-exporter's BrokerRuntimeStats constructor does and returns
// the numbers it would export, by key (the composite ones as key.part), or the first key it would fail on.
func parseExporterRuntime(table map[string]string) (map[string]float64, error) {
	out := map[string]float64{}
	get := func(k string) (string, error) {
		v, ok := table[k]
		if !ok {
			return "", fmt.Errorf("key %s missing", k)
		}
		return v, nil
	}
	for _, k := range exporterLongKeys {
		v, err := get(k)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("key %s: Long.parseLong(%q): %v", k, v, err)
		}
		out[k] = float64(n)
	}
	for _, k := range exporterDoubleKeys {
		v, err := get(k)
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return nil, fmt.Errorf("key %s: Double.parseDouble(%q): %v", k, v, err)
		}
		out[k] = f
	}
	for _, k := range exporterIntKeys {
		v, err := get(k)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("key %s: Integer.parseInt(%q): %v", k, v, err)
		}
		out[k] = float64(n)
	}
	for _, k := range exporterTPSKeys { // "10s 60s 600s" rates
		v, err := get(k)
		if err != nil {
			return nil, err
		}
		for i, part := range strings.Split(v, " ")[:min(3, len(strings.Split(v, " ")))] {
			f, err := strconv.ParseFloat(part, 64)
			if err != nil {
				return nil, fmt.Errorf("key %s part %d: Double.parseDouble(%q): %v", k, i, part, err)
			}
			out[k+"."+strconv.Itoa(i)] = f
		}
	}
	for _, k := range exporterTextKeys {
		if _, err := get(k); err != nil {
			return nil, err
		}
	}
	// remainHowManyDataToFlush: the number before the unit of "1.5 KiB".
	v, err := get("remainHowManyDataToFlush")
	if err != nil {
		return nil, err
	}
	if out["remainHowManyDataToFlush"], err = strconv.ParseFloat(strings.Split(v, " ")[0], 64); err != nil {
		return nil, fmt.Errorf("key remainHowManyDataToFlush %q: %v", v, err)
	}
	// commitLogDirCapacity: "Total : 26.0 GiB, Free : 10.0 GiB." split on spaces, the units' last character cut.
	if v, err = get("commitLogDirCapacity"); err != nil {
		return nil, err
	}
	arr := strings.Split(v, " ")
	if len(arr) < 8 {
		return nil, fmt.Errorf("key commitLogDirCapacity %q: %d fields, the exporter reads 8", v, len(arr))
	}
	for _, part := range []struct {
		name       string
		num, unit  string
		outputName string
	}{{"total", arr[2], arr[3], "commitLogDirCapacity.total"}, {"free", arr[6], arr[7], "commitLogDirCapacity.free"}} {
		n, err := machineReadableByteCount(part.num + " " + part.unit[:len(part.unit)-1])
		if err != nil {
			return nil, fmt.Errorf("key commitLogDirCapacity %q (%s): %v", v, part.name, err)
		}
		out[part.outputName] = n
	}
	// putMessageDistributeTime: "[<=0ms]:3 [0~10ms]:12 ..." pairs with Integer.parseInt values.
	if v, err = get("putMessageDistributeTime"); err != nil {
		return nil, err
	}
	buckets := 0
	for _, item := range strings.Split(v, " ") {
		kv := strings.Split(item, ":")
		if len(kv) < 2 {
			continue // the exporter warns and skips (the trailing space gives one empty item)
		}
		n, err := strconv.ParseInt(kv[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("key putMessageDistributeTime item %q: Integer.parseInt: %v", item, err)
		}
		out["putMessageDistributeTime."+strings.Trim(kv[0], "[]")] = float64(n)
		out["putMessageDistributeTime.sum"] += float64(n)
		buckets++
	}
	out["putMessageDistributeTime.buckets"] = float64(buckets)
	// scheduleMessageOffset_<level>: "delayOffset,maxOffset", both Long.parseLong.
	for k, v := range table {
		if !strings.HasPrefix(k, "scheduleMessageOffset") {
			continue
		}
		arr := strings.Split(v, ",")
		if len(arr) < 2 {
			return nil, fmt.Errorf("key %s %q: the exporter reads two numbers", k, v)
		}
		for i, name := range []string{".delay", ".max"} {
			n, err := strconv.ParseInt(arr[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("key %s %q: Long.parseLong: %v", k, v, err)
			}
			out[k+name] = float64(n)
		}
	}
	return out, nil
}

// machineReadableByteCount is the exporter's Utils.machineReadableByteCount: "1.5 KiB" -> 1536.
func machineReadableByteCount(s string) (float64, error) {
	num, unit, ok := strings.Cut(s, " ")
	if !ok {
		return 0, fmt.Errorf("%q has no unit", s)
	}
	base, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	if unit == "B" {
		return base, nil
	}
	exp := strings.IndexByte("KMGTPE", unit[0]) + 1
	return base * math.Pow(1024, float64(exp)), nil
}

// exporterStats is VIEW_BROKER_STATS_DATA's body as the exporter decodes it.
type exporterStats struct {
	StatsMinute, StatsHour, StatsDay struct {
		Sum   int64   `json:"sum"`
		Tps   float64 `json:"tps"`
		Avgpt float64 `json:"avgpt"`
	}
}

// TestExporterBodies: after traffic from the official Go client (sends, a consumer that consumes everything
// and asks for one retry), the three requests rocketmq-exporter sends answer bodies that its parsing accepts,
// with figures that match the traffic: GET_BROKER_RUNTIME_INFO carries every key BrokerRuntimeStats reads,
// VIEW_BROKER_STATS_DATA counts the topic's puts, the group's gets and send-backs, and the broker's totals,
// and GET_ALL_PRODUCER_INFO lists the producer.
func TestExporterBodies(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	const topic, group, n = "ExporterTopic", "ExporterGroup", 20
	createTopic(t, c, topic, 2)
	p := newProducer(t, c)
	sendN(t, p, topic, "exp", n)
	delayed := primitive.NewMessage(topic, []byte("delayed"))
	delayed.WithDelayTimeLevel(1) // through SCHEDULE_TOPIC_XXXX queue 0: a scheduleMessageOffset_1 key
	if _, err := p.SendSync(context.Background(), delayed); err != nil {
		t.Fatal(err)
	}

	got := newReceived()
	var retried atomic.Bool
	pc := newPushConsumer(t, c, group, consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	err := pc.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		if string(msgs[0].Body) == "exp-0" && retried.CompareAndSwap(false, true) {
			return consumer.ConsumeRetryLater, nil // one send-back
		}
		got.add(msgs...)
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Shutdown() })
	got.waitDistinct(t, n-1, 30*time.Second)

	w := newWireClient(t)
	addr := c.Broker(0).Addr()
	call := func(code remoting.RequestCode, ext map[string]string) *remoting.Command {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := w.Invoke(ctx, addr, remoting.NewRequest(code, ext, nil))
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		return resp
	}
	stats := func(name, key string) (exporterStats, *remoting.Command) {
		t.Helper()
		resp := call(remoting.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key})
		var s exporterStats
		if resp.Code == int32(remoting.Success) {
			if err := json.Unmarshal(resp.Body, &s); err != nil {
				t.Fatalf("%s %s body %s: %v", name, key, resp.Body, err)
			}
		}
		return s, resp
	}

	// VIEW_BROKER_STATS_DATA: the counts are exact; every window holds them (all in the last minute).
	cluster.Eventually(t, 30*time.Second, func() bool {
		s, resp := stats("SNDBCK_PUT_NUMS", topic+"@"+group)
		return resp.Code == int32(remoting.Success) && s.StatsMinute.Sum == 1
	}, "the consumer's send-back counted under SNDBCK_PUT_NUMS %s@%s", topic, group)
	// The group got the n sends (and, once due, the delayed message: n+1).
	cluster.Eventually(t, 30*time.Second, func() bool {
		s, _ := stats("GROUP_GET_NUMS", topic+"@"+group)
		return s.StatsMinute.Sum >= n
	}, "GROUP_GET_NUMS at %d", n)
	if s, _ := stats("GROUP_GET_NUMS", topic+"@"+group); s.StatsMinute.Sum > n+1 {
		t.Errorf("GROUP_GET_NUMS %d, more than the %d messages stored", s.StatsMinute.Sum, n+1)
	}
	for _, c := range []struct {
		name, key string
		sum       int64 // 0: more than 0
		avgpt     bool  // counts calls: avgpt > 0
	}{
		{"TOPIC_PUT_NUMS", topic, n + 1, true}, // and the delayed message, counted under its topic
		{"TOPIC_PUT_SIZE", topic, 0, true},
		{"GROUP_GET_NUMS", topic + "@" + group, 0, true},
		{"GROUP_GET_SIZE", topic + "@" + group, 0, true},
		{"BROKER_PUT_NUMS", "DefaultCluster", 0, false},
		{"BROKER_GET_NUMS", "DefaultCluster", 0, false},
	} {
		s, resp := stats(c.name, c.key)
		if resp.Code != int32(remoting.Success) {
			t.Fatalf("VIEW_BROKER_STATS_DATA %s %s: code %d %q", c.name, c.key, resp.Code, resp.Remark)
		}
		m := s.StatsMinute
		if (c.sum > 0 && m.Sum != c.sum) || m.Sum <= 0 || m.Tps <= 0 || (c.avgpt && m.Avgpt <= 0) {
			t.Errorf("%s %s minute %+v, want sum %d (or > 0), tps > 0", c.name, c.key, m, c.sum)
		}
		// Within the item's first hour the hour and the day hold everything; the minute at most that.
		if s.StatsHour.Sum != s.StatsDay.Sum || s.StatsHour.Sum < m.Sum {
			t.Errorf("%s %s: hour %+v, day %+v, minute %+v", c.name, c.key, s.StatsHour, s.StatsDay, m)
		}
	}
	if s, _ := stats("TOPIC_PUT_SIZE", topic); s.StatsMinute.Avgpt < float64(len("exp-0")) {
		t.Errorf("TOPIC_PUT_SIZE average %v bytes per put, below the body size", s.StatsMinute.Avgpt)
	}
	if _, resp := stats("TOPIC_PUT_NUMS", "NoSuchTopic"); resp.Code != int32(remoting.SystemError) ||
		!strings.Contains(resp.Remark, "not exist") {
		t.Errorf("an unknown item: code %d %q, want SYSTEM_ERROR ... not exist", resp.Code, resp.Remark)
	}

	// GET_ALL_PRODUCER_INFO: the producer's group with its client, once its heartbeat came (the Go client
	// heartbeats the brokers it knows every 30 s; it learnt of this one at its first send).
	type producerInfo struct {
		ClientID            string `json:"clientId"`
		RemoteIP            string `json:"remoteIP"`
		Language            string `json:"language"`
		Version             int    `json:"version"`
		LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	}
	var (
		list []producerInfo
		body []byte
	)
	cluster.Eventually(t, 45*time.Second, func() bool {
		resp := call(remoting.GetAllProducerInfo, nil)
		var producers struct {
			Data map[string][]producerInfo `json:"data"`
		}
		if resp.Code != int32(remoting.Success) || json.Unmarshal(resp.Body, &producers) != nil {
			t.Fatalf("GET_ALL_PRODUCER_INFO: code %d body %s", resp.Code, resp.Body)
		}
		list, body = producers.Data["PG_"+t.Name()], resp.Body
		return len(list) > 0
	}, "the producer group in GET_ALL_PRODUCER_INFO")
	if len(list) != 1 || list[0].ClientID == "" || list[0].Language != "GO" || list[0].Version <= 0 ||
		!strings.HasPrefix(list[0].RemoteIP, "/127.0.0.1:") || list[0].LastUpdateTimestamp <= 0 {
		t.Fatalf("GET_ALL_PRODUCER_INFO for PG_%s: %+v (all groups %s)", t.Name(), list, body)
	}

	// GET_BROKER_RUNTIME_INFO, parsed with the exporter's rules. The rates come from a sampler that runs every
	// second: the producer keeps sending, a message per look, until the rates show traffic (the consumer
	// consumes them) and the delay level 1 queue shows the delayed message (its key comes once the schedule
	// service has taken up the level, which can be after the first rates).
	var (
		kv struct {
			Table map[string]string `json:"table"`
		}
		v    map[string]float64
		sent = n
	)
	cluster.Eventually(t, 10*time.Second, func() bool {
		resp := call(remoting.GetBrokerRuntimeInfo, nil)
		if resp.Code != int32(remoting.Success) || json.Unmarshal(resp.Body, &kv) != nil {
			t.Fatalf("GET_BROKER_RUNTIME_INFO: code %d body %s", resp.Code, resp.Body)
		}
		var err error
		if v, err = parseExporterRuntime(kv.Table); err != nil {
			t.Fatalf("rocketmq-exporter would fail on the runtime table: %v\n%v", err, kv.Table)
		}
		if v["putTps.2"] > 0 && v["getTransferedTps.2"] > 0 && v["scheduleMessageOffset_1.max"] == 1 {
			return true
		}
		sendN(t, p, topic, fmt.Sprintf("more%d", sent), 1)
		sent++
		return false
	}, "put and get rates after the traffic, and the delay level 1 queue's key")
	now := float64(time.Now().UnixMilli())
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"msgPutTotalTodayNow counts the sends (and the send-back)", v["msgPutTotalTodayNow"] >= n},
		{"putMessageTimesTotal counts the puts", v["putMessageTimesTotal"] >= n},
		{"msgGetTotalTodayNow counts the deliveries", v["msgGetTotalTodayNow"] >= n},
		{"commitLogMaxOffset past the records", v["commitLogMaxOffset"] > v["commitLogMinOffset"]},
		{"putMessageSizeTotal / puts = putMessageAverageSize",
			math.Abs(v["putMessageSizeTotal"]/v["putMessageTimesTotal"]-v["putMessageAverageSize"]) < 1e-6},
		{"earliestMessageTimeStamp in the past", v["earliestMessageTimeStamp"] > 0 && v["earliestMessageTimeStamp"] <= now},
		{"bootTimestamp before the first message", v["bootTimestamp"] <= v["earliestMessageTimeStamp"]},
		{"disk total >= free > 0", v["commitLogDirCapacity.total"] >= v["commitLogDirCapacity.free"] && v["commitLogDirCapacity.free"] > 0},
		{"disk ratios in 0..1", v["commitLogDiskRatio"] > 0 && v["commitLogDiskRatio"] < 1 && v["consumeQueueDiskRatio"] > 0 && v["consumeQueueDiskRatio"] < 1},
		{"13 put time buckets", v["putMessageDistributeTime.buckets"] == 13},
		{"the put time buckets hold at most the sends", v["putMessageDistributeTime.sum"] <= float64(sent+1)},
		{"putLatency999 >= putLatency99", v["putLatency999"] >= v["putLatency99"]},
		{"queue capacities configured", v["sendThreadPoolQueueCapacity"] > 0 && v["pullThreadPoolQueueCapacity"] > 0 && v["queryThreadPoolQueueCapacity"] > 0},
		{"idle pools: no head wait beyond a second", v["sendThreadPoolQueueHeadWaitTimeMills"] < 1000 && v["pullThreadPoolQueueHeadWaitTimeMills"] < 1000},
		{"no transient pool: Integer.MAX_VALUE buffers", v["remainTransientStoreBufferNumbs"] == math.MaxInt32},
		{"no append holds the lock for a second", v["pageCacheLockTimeMills"] < 1000},
		{"the delay level 1 queue holds the delayed message", v["scheduleMessageOffset_1.max"] == 1 && v["scheduleMessageOffset_1.delay"] <= 1},
	} {
		if !c.ok {
			t.Errorf("%s: %v", c.what, kv.Table)
		}
	}
}
