// Package admin is mqadmin: RocketMQ's admin tool, with its command names, options and output columns,
// talking to RocketRaft (or RocketMQ) name servers and brokers over the remoting protocol. cmd/mqadmin is
// its thin main; Run is the whole program.
//
// # Commands
//
// Topics: updateTopic (-a RocketMQ 5 attributes), deleteTopic, topicList, topicRoute, topicStatus,
// updateTopicPerm, topicClusterList, updateOrderConf. Name servers (cmd_namesrv.go): wipeWritePerm,
// addWritePerm (drain a broker: its queues lose write permission in the routes, as RocketMQ's; the broker is
// not told), getNamesrvConfig, updateNamesrvConfig, updateKvConfig, deleteKvConfig. Brokers: clusterList,
// brokerStatus, getBrokerConfig, updateBrokerConfig (the keys broker.ReloadableConfigKeys lists).
// Consumers: consumerProgress (lag per queue, with totals), consumerConnection, producerConnection,
// updateSubGroup, deleteSubGroup, resetOffsetByTime; consumerStatus, getConsumerConfig,
// skipAccumulatedMessage, cloneGroupOffset (cmd_consumer_ops.go). Stats (cmd_stats.go): statsAll,
// brokerConsumeStats, sendMsgStatus, clusterRT. Messages: queryMsgById, queryMsgByKey, queryMsgByOffset,
// sendMessage, consumeMessage, queryMsgTraceById (the trace records of clients with tracing on, found in
// the trace topic by message id: cmd_trace.go); queryMsgByUniqueKey, printMsg, printMsgByQueue (cmd_print.go). Store
// (cmd_store.go): queryCq, cleanExpiredCQ, deleteExpiredCommitLog, cleanUnusedTopic. Migration
// (cmd_export.go): exportMetadata, exportConfigs, and importMetadata (ours: creates an export's topics and
// groups elsewhere). ACL (cmd_acl.go): updateAclConfig, deleteAclConfig, getAclConfig, updateGlobalWhiteAddr,
// clusterAclConfigVersion. Raft (cmd_raft*.go, ours): getRaftStatus, transferLeadership, addRaftPeer,
// removeRaftPeer. The web console: console (tools/console serves it; console.go answers its pages with
// these commands' requests). `mqadmin help [command]` lists them or a command's options.
//
// # Options
//
// As RocketMQ's tool: one-letter options with long names (-t/--topic, -b/--brokerAddr, -c/--clusterName,
// -g, -i, -k, ...), options that take "true"/"false" as a value (-o true), -n for the name servers
// ("host:port;host:port", default $NAMESRV_ADDR). Where RocketMQ 4.9 and 5.x differ, 5.x wins:
// queryMsgByKey -m maxNum and -c cluster, resetOffsetByTime -c cluster and -b/-q/-o (one queue), sendMessage
// -m msgTraceEnable (true refused: no traces yet), queryMsgById -u unitName and -c, clusterList -c,
// topicStatus -c, updateTopic -a. Every command also takes --json (print the result as one
// JSON document, for scripts), --timeout (per request), and credentials for clusters with ACL on:
// --accessKey/--secretKey, or a YAML tools config with accessKey and secretKey (--toolsConfig FILE, else
// RocketMQ's $ROCKETMQ_HOME/conf/tools.yml when it exists). With credentials every request is signed as the
// official clients sign (remoting.SignRequest). updateAclConfig and deleteAclConfig use -a/--accessKey (and
// -s/--secretKey) for the account they edit, as RocketMQ's do, so they sign with the tools config only.
//
// # Output and exit status
//
// Tables carry RocketMQ's column headers ("#Cluster Name", "#Broker Name", "#BID", ...), each column as wide
// as its widest cell. Exit status 0 when the command did what it was asked, 1 when it failed (a server
// unreachable or refusing; with several brokers, what succeeded is printed and the failure still exits 1),
// 2 for a bad command line. A failure prints one line on stderr: "mqadmin <command>: <reason>".
//
// # Wire
//
// Name servers: GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO, GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
// DELETE_TOPIC_IN_NAMESRV, PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG, WIPE_WRITE_PERM_OF_BROKER,
// ADD_WRITE_PERM_OF_BROKER, GET_NAMESRV_CONFIG, UPDATE_NAMESRV_CONFIG. Brokers: UPDATE_AND_CREATE_TOPIC,
// DELETE_TOPIC_IN_BROKER, GET_TOPIC_STATS_INFO, GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG,
// UPDATE_BROKER_CONFIG, GET_CONSUME_STATS, GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST,
// QUERY_TOPIC_CONSUME_BY_WHO, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP,
// INVOKE_BROKER_TO_RESET_OFFSET, UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
// GET_BROKER_CLUSTER_ACL_INFO, GET_BROKER_CLUSTER_ACL_CONFIG, VIEW_BROKER_STATS_DATA, GET_BROKER_CONSUME_STATS,
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_CONSUMER_RUNNING_INFO, UPDATE_CONSUMER_OFFSET, QUERY_CONSUME_QUEUE,
// DELETE_EXPIRED_COMMITLOG, CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC, GET_ALL_TOPIC_CONFIG,
// VIEW_MESSAGE_BY_ID, QUERY_MESSAGE, PULL_MESSAGE (no suspend, no commit), SEND_MESSAGE_V2, GET_MIN_OFFSET,
// GET_MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, CONSUME_MESSAGE_DIRECTLY (the console's pages: console_ops.go,
// console_acl.go). The MessageQueue-keyed tables of the broker answers come in
// fastjson's object-keyed form (protocol/fastjson.go). Every request goes through
// package client (NewClient): name-server failover, a refusal as a *client.ResponseError with its code, the
// route-to-queues and UNIQ_KEY of every tool; a client without name servers is exit status 2.
package admin
