package protocol

// The name server's route bodies. Field names are RocketMQ's (QueueData.java, BrokerData.java,
// TopicRouteData.java, ClusterInfo.java, TopicList.java, KVTable.java): wire format, never rename a tag.

// QueueData is one broker name's queues of a topic.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData is one broker name's addresses by broker id (0 = master). BrokerAddrs is never nil in what the
// name server sends: the Go client parses the text between its braces and panics when the key is missing.
type BrokerData struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// TopicRouteData is GET_ROUTEINFO_BY_TOPIC's answer. QueueDatas and BrokerDatas are always arrays.
type TopicRouteData struct {
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// ClusterInfo is GET_BROKER_CLUSTER_INFO's answer.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// TopicList is the answer of the topic-listing requests.
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// KVTable is GET_KVLIST_BY_NAMESPACE's answer (and REGISTER_BROKER's body: the order-topic table).
type KVTable struct {
	Table map[string]string `json:"table"`
}
