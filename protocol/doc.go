// Package protocol holds the bodies of RocketMQ's remoting protocol that more than one side of the wire
// reads or writes: the name server's route data (route.go), topic configs with their DataVersion and the
// topic-name rule (topic.go), REGISTER_BROKER's body in its JSON and compressed forms (register.go), the
// bodies of the admin answers tools read (admin_body.go: MessageQueue, TopicStatsTable entries, ConsumeStats
// and ConsumeStatsList, SubscriptionGroupConfig, BrokerStatsData, ConsumerRunningInfo), the plain ACL's
// accounts as the ACL requests carry them (acl.go), the broker's consumer and delay offset tables
// (offset_tables.go: consumerOffset.json, delayOffset.json and their GET_ALL_* bodies), RocketRaft's own Raft status bodies (raft.go), the
// permission bits (perm.go), RocketMQ 5's pop family (pop.go, pop_header.go: the POP_MESSAGE, ACK_MESSAGE,
// CHANGE_MESSAGE_INVISIBLETIME and NOTIFICATION headers, BATCH_ACK_MESSAGE's body, the receipt handle
// ExtraInfo "ckQueueOffset popTime invisibleTime reviveQid retryMark brokerName queueId queueOffset", the
// check-point and ack records of the revive topic), the system topic names and prefixes, declared once for
// the broker, the ACL and the tools (topic_names.go), and fastjson both ways for the
// MessageQueue-keyed tables and bare integer keys that Java
// brokers write (fastjson.go). The frame, the codes and the header fields are package remoting's; the
// stored-message record is package message's.
//
// It is a leaf: it imports only the standard library, so the name server, the broker and the client
// tools (mqadmin, mqbench, the chaos workload, the console) share one declaration of each type, and the
// tools build without the servers (internal/archtest holds the rule).
//
// # Wire formats (never rename a tag)
//
// Field names and JSON tags are RocketMQ's (QueueData.java, BrokerData.java, TopicRouteData.java,
// ClusterInfo.java, TopicList.java, KVTable.java, DataVersion.java, TopicConfig.java,
// RegisterBrokerBody.java, SubscriptionGroupConfig.java, PlainAccessConfig.java,
// GetBrokerClusterAclConfigResponseBody.java, ConsumeStats.java, ConsumeStatsList.java, BrokerStatsData.java, MessageQueue.java, TopicOffset.java,
// OffsetWrapper.java); golden_test.go pins the bytes every type encodes to. DataVersion always writes
// stateVersion, as RocketMQ 5.x's fastjson does; 4.x readers ignore the field. The same JSON is on disk:
// config/topics.json is a TopicConfigSerializeWrapper.
//
// REGISTER_BROKER's body is RegisterBrokerBody JSON, or with ext compressed=true a zlib stream of
//
//	+-------------+------------------+-------------+----------------------------------------------+
//	| int32 len   | DataVersion JSON | int32 count | count x (int32 len | "name read write perm     |
//	|             |                  |             |          filterType [attributesJSON]")        |
//	+-------------+------------------+-------------+----------------------------------------------+
//	| int32 len   | filterServerList JSON | (5.x: int32 n, n x (int32 len | queue mapping JSON))  |
//	+-------------+-----------------------+------------------------------------------------------+
//
// DecodeRegisterBrokerBody bounds the inflated size and the topic count, so a small body cannot inflate
// into unbounded memory (FuzzDecodeRegisterBrokerBody).
package protocol
