package protocol

import (
	"encoding/json"
	"testing"
)

// The JSON of every body type, pinned byte for byte: these bytes go to Java and Go clients, to name
// servers and slaves of other versions, and into topics.json and subscriptionGroup.json. A change here
// is a wire change and must be deliberate.
func TestBodiesEncodeAsBefore(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"DataVersion", DataVersion{Timestamp: 1700000000000, Counter: 3},
			`{"stateVersion":0,"timestamp":1700000000000,"counter":3}`},
		{"TopicConfig", TopicConfig{TopicName: "T", ReadQueueNums: 8, WriteQueueNums: 4, Perm: PermRead | PermWrite,
			TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}},
			`{"topicName":"T","readQueueNums":8,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{}}`},
		{"RegisterBrokerBody", RegisterBrokerBody{FilterServerList: []string{}, TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]*TopicConfig{"T": {TopicName: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 7}},
			DataVersion:      DataVersion{StateVersion: 2, Timestamp: 5, Counter: 6}}},
			`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"T","readQueueNums":1,"writeQueueNums":1,"perm":7,"topicFilterType":"","topicSysFlag":0,"order":false,"attributes":null}},"dataVersion":{"stateVersion":2,"timestamp":5,"counter":6}},"filterServerList":[]}`},
		{"TopicRouteData", TopicRouteData{
			QueueDatas:  []QueueData{{BrokerName: "b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
			BrokerDatas: []BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{MasterID: "127.0.0.1:10911", 1: "127.0.0.2:10911"}}}},
			`{"queueDatas":[{"brokerName":"b","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.2:10911"}}],"filterServerTable":null}`},
		{"ClusterInfo", ClusterInfo{BrokerAddrTable: map[string]BrokerData{}, ClusterAddrTable: map[string][]string{"c": {"b"}}},
			`{"brokerAddrTable":{},"clusterAddrTable":{"c":["b"]}}`},
		{"TopicList", TopicList{TopicList: []string{"A", "B"}}, `{"topicList":["A","B"]}`},
		{"AclConfig", AclConfig{GlobalWhiteAddrs: []string{"10.0.0.*"}, PlainAccessConfigs: []PlainAccessConfig{{AccessKey: "rocketmq2",
			SecretKey: "12345678", Admin: true, DefaultTopicPerm: "DENY", TopicPerms: []string{"topicA=PUB"}}}},
			`{"globalWhiteAddrs":["10.0.0.*"],"plainAccessConfigs":[{"accessKey":"rocketmq2","secretKey":"12345678","whiteRemoteAddress":"","admin":true,"defaultTopicPerm":"DENY","defaultGroupPerm":"","topicPerms":["topicA=PUB"],"groupPerms":null}]}`},
		{"BrokerStatsData", BrokerStatsData{StatsMinute: BrokerStatsItem{Sum: 6, Tps: 0.1, Avgpt: 1}},
			`{"statsMinute":{"sum":6,"tps":0.1,"avgpt":1},"statsHour":{"sum":0,"tps":0,"avgpt":0},"statsDay":{"sum":0,"tps":0,"avgpt":0}}`},
		{"ConsumeStatsList", ConsumeStatsList{BrokerAddr: "a:1", ConsumeStatsList: []map[string][]ConsumeStats{{"g": {{ConsumeTps: 1}}}}, TotalDiff: 2},
			`{"brokerAddr":"a:1","consumeStatsList":[{"g":[{"consumeTps":1,"offsetTable":null}]}],"totalDiff":2,"totalInflightDiff":0}`},
		{"KVTable", KVTable{Table: map[string]string{"k": "v"}}, `{"table":{"k":"v"}}`},
		{"MessageQueue", MessageQueue{Topic: "T", BrokerName: "b", QueueID: 3}, `{"topic":"T","brokerName":"b","queueId":3}`},
		{"TopicOffset", TopicOffset{LastUpdateTimestamp: 1, MaxOffset: 9, MinOffset: 2},
			`{"lastUpdateTimestamp":1,"maxOffset":9,"minOffset":2}`},
		{"OffsetWrapper", OffsetWrapper{BrokerOffset: 9, ConsumerOffset: 7, LastTimestamp: 1, PullOffset: 8},
			`{"brokerOffset":9,"consumerOffset":7,"lastTimestamp":1,"pullOffset":8}`},
		{"ConsumerOffsetWrapper", ConsumerOffsetWrapper{OffsetTable: map[string]map[int32]int64{"T@g": {0: 5, 1: 7}}},
			`{"offsetTable":{"T@g":{"0":5,"1":7}}}`},
		{"DelayOffsetWrapper", DelayOffsetWrapper{OffsetTable: map[int]int64{1: 3, 18: 0}}, `{"offsetTable":{"1":3,"18":0}}`},
		{"TimerCheckpoint", TimerCheckpoint{LowWater: 4, Delivered: []int64{6, 9}}, `{"lowWater":4,"delivered":[6,9]}`},
		{"SubscriptionGroupConfig", SubscriptionGroupConfig{GroupName: "g", ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16,
			WhichBrokerWhenConsumeSlowly: 1},
			`{"groupName":"g","consumeEnable":true,"consumeFromMinEnable":false,"consumeBroadcastEnable":false,"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1,"notifyConsumerIdsChangedEnable":false,"consumeMessageOrderly":false}`},
		{"RaftMember", RaftMember{ID: "n1", Addr: "127.0.0.1:40911", Suffrage: "Voter"}, `{"id":"n1","addr":"127.0.0.1:40911","suffrage":"Voter"}`},
		{"RaftStatus", RaftStatus{Group: "g", SelfID: "n1", Role: "Leader", Master: true, Term: 2, Members: []RaftMember{}},
			`{"group":"g","selfId":"n1","peers":"","brokerAddr":"","brokerId":0,"role":"Leader","master":true,"term":2,"commitIndex":0,"appliedIndex":0,"lastIndex":0,"leaderId":"","leaderAddr":"","failovers":0,"members":[],"masterBrokerAddr":"","forwarded":0,"forwardFailed":0}`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s encodes as\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
