// Package namesrv is RocketMQ's name server: brokers register their topics with it, clients ask it where a
// topic's queues live. Several name servers run side by side, unaware of each other; every broker registers
// with each of them (every 30 s and after each topic change), and clients ask any.
//
// # Tables (RouteInfoManager, under one RWMutex)
//
//	topicQueueTable   topic       -> QueueData{brokerName, readQueueNums, writeQueueNums, perm, topicSysFlag}
//	                                 per broker name, a slice sorted by broker name (queueset.go)
//	brokerAddrTable   brokerName  -> BrokerData{cluster, brokerAddrs: brokerId -> "ip:port"}   (id 0 = master)
//	clusterAddrTable  cluster     -> set of brokerName
//	brokerLiveTable   brokerAddr  -> last registration time, data version, HA address, its connection
//	brokerTopics      brokerName  -> the topics holding its queue data (an index: dropping a broker name,
//	                                 changing its permissions or its deleted topics touch only those)
//
// Route answers come from a cache (routecache.go): each topic's GET_ROUTEINFO_BY_TOPIC answer is encoded
// once and handed to every client until a registration, an expiry, a closed connection, a deletion, a
// permission change or a Raft stand-in change touches what it shows. Writers mark it stale under the write
// lock by bumping a version of the topic or of a broker name (O(1) each); the next reader rebuilds it,
// one rebuild per topic at a time, writing the answer from the tables under the read lock into one buffer
// (routejson.go: encoding/json's bytes, about 1 us and 4 allocations for a topic on two broker names). A
// route query's header is decoded without a copy, its topic taken from the route table (TopicName, a
// remoting.Interner): a query allocates nothing on the name server. The cluster info and the topic lists are cached the
// same way. The write lock's hold times are exported (rocketmq_namesrv_route_write_lock_seconds); nothing
// is logged while it is held.
//
// A registration body an address sent before (a broker's periodic re-registration of an unchanged table)
// is not decoded again: each address keeps what its bodies of its current data version said, by length and
// hash (regtable.go). Bodies that must be decoded are decoded at most GOMAXPROCS/2 at a time, so that a
// burst of first registrations leaves the route queries a core.
//
// A master's registration replaces its broker name's queue data of every topic in its table, when the table's
// data version changed or on its first registration; at the same data version it adds the topics the broker
// name lacks, as RocketMQ does, which is how the chunks of a split registration (RocketMQ 5's
// enableSplitRegistration: one data version, several REGISTER_BROKERs) are applied; rounds.go follows each
// master's rounds so that every chunk of a new version is applied whole. Applying a table whole looks every
// topic of it up; that is done before the write lock, with the read lock, and under the write lock only the
// topics that differ are applied, unless the broker name's queue data changed in between (tablediff.go). A slave's topics are ignored (its
// reply names the master and the master's HA address). BROKER_HEARTBEAT refreshes a registered address's
// liveness between registrations. After a restart, routes wait for the broker names routed before it to
// route as many topics again (needWaitForService, readiness.go). A broker address leaves the tables when it unregisters, when the connection it
// registered on closes, or when it has been silent for brokerChannelExpiredTime (checked every
// scanNotActiveBrokerInterval). When a broker name has no address left, it leaves its cluster and its queue data
// leaves every topic; while a slave remains, the queue data stays so consumers can still read from it (as
// RocketMQ 4.x does).
//
// # Requests served
//
//	code  name                                 answer
//	 100  PUT_KV_CONFIG                        ext namespace, key, value; persisted to kvConfig.json
//	 101  GET_KV_CONFIG                        ext value, or QUERY_NOT_FOUND
//	 102  DELETE_KV_CONFIG                     persisted
//	 103  REGISTER_BROKER                      ext haServerAddr, masterAddr (slaves); body ORDER_TOPIC_CONFIG KV
//	 104  UNREGISTER_BROKER
//	 105  GET_ROUTEINFO_BY_TOPIC               TopicRouteData JSON, or TOPIC_NOT_EXIST with a remark
//	 106  GET_BROKER_CLUSTER_INFO              ClusterInfo JSON
//	 205  WIPE_WRITE_PERM_OF_BROKER            ext wipeTopicCount
//	 206  GET_ALL_TOPIC_LIST_FROM_NAMESERVER   TopicList JSON
//	 216  DELETE_TOPIC_IN_NAMESRV              ext topic, optional clusterName
//	 219  GET_KVLIST_BY_NAMESPACE              KVTable JSON, or QUERY_NOT_FOUND
//	 224  GET_TOPICS_BY_CLUSTER                TopicList JSON
//	 304  GET_SYSTEM_TOPIC_LIST_FROM_NS        TopicList JSON (cluster and broker names)
//	 318  UPDATE_NAMESRV_CONFIG                body "key=value" lines: reloadable keys only (config_admin.go), until restart
//	 319  GET_NAMESRV_CONFIG                   body every key=value of the config in force
//	 322  QUERY_DATA_VERSION                   ext changed; body the registered DataVersion
//	 327  ADD_WRITE_PERM_OF_BROKER             ext addTopicCount
//	 904  BROKER_HEARTBEAT                     ext clusterName, brokerAddr: the broker stays alive (RocketMQ 5)
//
// # Wire formats (never change a field name)
//
// The route body is compact JSON with brokerAddrs always present and queueDatas always an array; the official
// Go client parses brokerAddrs as raw text between its braces, so no whitespace may appear in it:
//
//	{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],
//	 "brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"10.0.0.5:10911"}}],
//	 "filterServerTable":{}}
//
// REGISTER_BROKER's body (RegisterBrokerBody JSON, or zlib-compressed with ext compressed=true) is
// package protocol's (protocol/doc.go draws the compressed layout, protocol.DecodeRegisterBrokerBody bounds
// it); ext bodyCrc32, when not 0, is the CRC32 of the body masked with 0x7FFFFFFF, checked here.
//
// kvConfig.json: {"configTable":{"<namespace>":{"<key>":"<value>"}}}, rewritten atomically after each change.
//
// # Who may write (aclEnable)
//
// Without aclEnable (the default, as RocketMQ 4.x) anyone who reaches the port may register a broker (and so
// route a topic's clients to an address of their choosing), unregister one, delete a topic's route, wipe write
// permissions or change the KV settings, or keep a dead broker routed (QUERY_DATA_VERSION with the version it
// had, or BROKER_HEARTBEAT, refreshes its liveness), or change the config. With aclEnable those ten writes need a request signed by an account
// of aclFile (the broker's plain_acl.yml): registration an admin account or one named in aclBrokerAccessKeys
// (the brokers sign with their accessKey/secretKey; QUERY_DATA_VERSION and BROKER_HEARTBEAT the same), the others an admin account. Reads stay open. acl.go has
// the table; a refusal is NO_PERMISSION, changes nothing and is logged with the remote address.
//
// Under TLS the other credential is a client certificate: with peerTlsTrustCertPath (the cluster CA, the file
// the brokers' peer TLS trusts), a request on a TLS connection whose client presented a certificate of that CA
// naming a node (URI rocketraft://<group>/<id>) may make all ten writes, signed or not; otherwise the
// signature decides as above. The port must ask for certificates (tlsServerMode permissive or enforcing,
// tlsServerNeedClientAuth optional or require), and peerTlsTrustCertPath without aclEnable is a start-up error
// (it would guard nothing). Brokers present theirs with tlsEnable, tlsClientCertPath and tlsClientKeyPath.
//
// The check is the remoting server's guard "acl" ("acl+certWrites" with peerTlsTrustCertPath); the request
// counter of the Prometheus endpoint (metrics.go) is a request observer beside it, which sees only what the
// guard lets through and cannot take its place (remoting/doc.go, "Interceptors"; before, the two shared one
// slot and metricsExporterType=PROM switched the ACL off). The port's start-up line names both:
//
//	remoting: listening addr=0.0.0.0:9876 tls=enforcing clientCerts=RequestClientCert guards=acl+certWrites observers=namesrv_requests
package namesrv
