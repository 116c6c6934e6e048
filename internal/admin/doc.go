// Package admin is mqadmin: RocketMQ's admin tool, with its command names, options and output columns,
// talking to RocketRaft (or RocketMQ) name servers and brokers over the remoting protocol. cmd/mqadmin is
// its thin main; Run is the whole program.
//
// # Commands
//
// Topics: updateTopic, deleteTopic, topicList, topicRoute, topicStatus. Brokers: clusterList, brokerStatus,
// getBrokerConfig, updateBrokerConfig. Consumers: consumerProgress (lag per queue, with totals),
// consumerConnection, producerConnection, updateSubGroup, deleteSubGroup, resetOffsetByTime. Messages:
// queryMsgById, queryMsgByKey, queryMsgByOffset, sendMessage, consumeMessage. The web console: console
// (internal/console serves it; console.go answers its pages with these commands' requests). `mqadmin help [command]`
// lists them or a command's options. The Raft commands are not there yet: see raft.go.
//
// # Options
//
// As RocketMQ's tool: one-letter options with long names (-t/--topic, -b/--brokerAddr, -c/--clusterName,
// -g, -i, -k, ...), options that take "true"/"false" as a value (-o true), -n for the name servers
// ("host:port;host:port", default $NAMESRV_ADDR). Every command also takes --json (print the result as one
// JSON document, for scripts), --timeout (per request), and credentials for clusters with ACL on:
// --accessKey/--secretKey, or a YAML tools config with accessKey and secretKey (--toolsConfig FILE, else
// RocketMQ's $ROCKETMQ_HOME/conf/tools.yml when it exists). With credentials every request is signed as the
// official clients sign (remoting.SignRequest).
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
// DELETE_TOPIC_IN_NAMESRV, PUT_KV_CONFIG (ordered topics). Brokers: UPDATE_AND_CREATE_TOPIC,
// DELETE_TOPIC_IN_BROKER, GET_TOPIC_STATS_INFO, GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG,
// UPDATE_BROKER_CONFIG, GET_CONSUME_STATS, GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST,
// QUERY_TOPIC_CONSUME_BY_WHO, UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP,
// INVOKE_BROKER_TO_RESET_OFFSET, VIEW_MESSAGE_BY_ID, QUERY_MESSAGE, PULL_MESSAGE (no suspend, no commit),
// SEND_MESSAGE, GET_MIN_OFFSET, GET_MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP. The MessageQueue-keyed tables of
// the broker answers come in fastjson's object-keyed form (protocol/fastjson.go).
package admin
