package remoting

// The tables below are RocketMQ's own numbers (RequestCode.java, ResponseCode.java, RemotingSysResponseCode.java
// and LanguageCode.java of apache/rocketmq, the 4.9.x line plus the codes the 5.x line added). They are wire
// format: never change a number. Codes marked "4.x" exist only in the 4.x line, "5.x" only in the 5.x line; the
// rest are in both. Codes above 32767 (the 5.x POP family) cannot travel in a ROCKETMQ binary header, whose code
// field is an int16; they only work with JSON headers.

import "strconv"

// RequestCode is the code of a request command (Command.Code when the response flag is clear).
type RequestCode int32

// ResponseCode is the code of a response command (Command.Code when the response flag is set).
type ResponseCode int32

// LanguageCode is the sender's language, as the byte of a ROCKETMQ binary header carries it. JSON headers carry
// the name ("GO", "JAVA").
type LanguageCode byte

// Request codes.
const (
	SendMessage                          RequestCode = 10
	PullMessage                          RequestCode = 11
	QueryMessage                         RequestCode = 12
	QueryBrokerOffset                    RequestCode = 13
	QueryConsumerOffset                  RequestCode = 14
	UpdateConsumerOffset                 RequestCode = 15
	UpdateAndCreateTopic                 RequestCode = 17
	UpdateAndCreateTopicList             RequestCode = 18 // 5.x
	GetAllTopicConfig                    RequestCode = 21
	GetTopicConfigList                   RequestCode = 22
	GetTopicNameList                     RequestCode = 23
	UpdateBrokerConfig                   RequestCode = 25
	GetBrokerConfig                      RequestCode = 26
	TriggerDeleteFiles                   RequestCode = 27
	GetBrokerRuntimeInfo                 RequestCode = 28
	SearchOffsetByTimestamp              RequestCode = 29
	GetMaxOffset                         RequestCode = 30
	GetMinOffset                         RequestCode = 31
	GetEarliestMsgStoreTime              RequestCode = 32
	ViewMessageByID                      RequestCode = 33
	HeartBeat                            RequestCode = 34
	UnregisterClient                     RequestCode = 35
	ConsumerSendMsgBack                  RequestCode = 36
	EndTransaction                       RequestCode = 37
	GetConsumerListByGroup               RequestCode = 38
	CheckTransactionState                RequestCode = 39
	NotifyConsumerIDsChanged             RequestCode = 40
	LockBatchMQ                          RequestCode = 41
	UnlockBatchMQ                        RequestCode = 42
	GetAllConsumerOffset                 RequestCode = 43
	GetAllDelayOffset                    RequestCode = 45
	CheckClientConfig                    RequestCode = 46
	GetClientConfig                      RequestCode = 47 // 5.x
	UpdateAndCreateACLConfig             RequestCode = 50 // 4.x
	DeleteACLConfig                      RequestCode = 51 // 4.x
	GetBrokerClusterACLInfo              RequestCode = 52 // 4.x
	UpdateGlobalWhiteAddrsConfig         RequestCode = 53 // 4.x
	GetBrokerClusterACLConfig            RequestCode = 54 // 4.9.0-4.9.4 and 5.x
	GetTimerCheckPoint                   RequestCode = 60 // 5.x
	GetTimerMetrics                      RequestCode = 61 // 5.x
	PutKVConfig                          RequestCode = 100
	GetKVConfig                          RequestCode = 101
	DeleteKVConfig                       RequestCode = 102
	RegisterBroker                       RequestCode = 103
	UnregisterBroker                     RequestCode = 104
	GetRouteInfoByTopic                  RequestCode = 105
	GetBrokerClusterInfo                 RequestCode = 106
	UpdateAndCreateSubscriptionGroup     RequestCode = 200
	GetAllSubscriptionGroupConfig        RequestCode = 201
	GetTopicStatsInfo                    RequestCode = 202
	GetConsumerConnectionList            RequestCode = 203
	GetProducerConnectionList            RequestCode = 204
	WipeWritePermOfBroker                RequestCode = 205
	GetAllTopicListFromNameServer        RequestCode = 206
	DeleteSubscriptionGroup              RequestCode = 207
	GetConsumeStats                      RequestCode = 208
	SuspendConsumer                      RequestCode = 209
	ResumeConsumer                       RequestCode = 210
	ResetConsumerOffsetInConsumer        RequestCode = 211
	ResetConsumerOffsetInBroker          RequestCode = 212
	AdjustConsumerThreadPool             RequestCode = 213
	WhoConsumeTheMessage                 RequestCode = 214
	DeleteTopicInBroker                  RequestCode = 215
	DeleteTopicInNamesrv                 RequestCode = 216
	RegisterTopicInNamesrv               RequestCode = 217 // 5.x
	GetKVListByNamespace                 RequestCode = 219
	ResetConsumerClientOffset            RequestCode = 220
	GetConsumerStatusFromClient          RequestCode = 221
	InvokeBrokerToResetOffset            RequestCode = 222
	InvokeBrokerToGetConsumerStatus      RequestCode = 223
	GetTopicsByCluster                   RequestCode = 224
	UpdateAndCreateSubscriptionGroupList RequestCode = 225 // 5.x
	QueryTopicConsumeByWho               RequestCode = 300
	RegisterFilterServer                 RequestCode = 301
	RegisterMessageFilterClass           RequestCode = 302
	QueryConsumeTimeSpan                 RequestCode = 303
	GetSystemTopicListFromNs             RequestCode = 304
	GetSystemTopicListFromBroker         RequestCode = 305
	CleanExpiredConsumeQueue             RequestCode = 306
	GetConsumerRunningInfo               RequestCode = 307
	QueryCorrectionOffset                RequestCode = 308
	ConsumeMessageDirectly               RequestCode = 309
	SendMessageV2                        RequestCode = 310
	GetUnitTopicList                     RequestCode = 311
	GetHasUnitSubTopicList               RequestCode = 312
	GetHasUnitSubUnUnitTopicList         RequestCode = 313
	CloneGroupOffset                     RequestCode = 314
	ViewBrokerStatsData                  RequestCode = 315
	CleanUnusedTopic                     RequestCode = 316
	GetBrokerConsumeStats                RequestCode = 317
	UpdateNamesrvConfig                  RequestCode = 318
	GetNamesrvConfig                     RequestCode = 319
	SendBatchMessage                     RequestCode = 320
	QueryConsumeQueue                    RequestCode = 321
	QueryDataVersion                     RequestCode = 322
	ResumeCheckHalfMessage               RequestCode = 323
	SendReplyMessage                     RequestCode = 324
	SendReplyMessageV2                   RequestCode = 325
	PushReplyMessageToClient             RequestCode = 326
	AddWritePermOfBroker                 RequestCode = 327
	GetAllProducerInfo                   RequestCode = 328
	DeleteExpiredCommitLog               RequestCode = 329
	QueryTopicsByConsumer                RequestCode = 343    // 5.x
	QuerySubscriptionByConsumer          RequestCode = 345    // 5.x
	GetTopicConfig                       RequestCode = 351    // 5.x
	GetSubscriptionGroupConfig           RequestCode = 352    // 5.x
	UpdateAndGetGroupForbidden           RequestCode = 353    // 5.x
	CheckRocksDBCQWriteProgress          RequestCode = 354    // 5.x
	ExportRocksDBConfigToJSON            RequestCode = 355    // 5.x
	LitePullMessage                      RequestCode = 361    // 5.x
	RecallMessage                        RequestCode = 370    // 5.x
	QueryAssignment                      RequestCode = 400    // 5.x
	SetMessageRequestMode                RequestCode = 401    // 5.x
	GetAllMessageRequestMode             RequestCode = 402    // 5.x
	UpdateAndCreateStaticTopic           RequestCode = 513    // 5.x
	GetBrokerMemberGroup                 RequestCode = 901    // 5.x
	AddBroker                            RequestCode = 902    // 5.x
	RemoveBroker                         RequestCode = 903    // 5.x
	BrokerHeartbeat                      RequestCode = 904    // 5.x
	NotifyMinBrokerIDChange              RequestCode = 905    // 5.x
	ExchangeBrokerHAInfo                 RequestCode = 906    // 5.x
	GetBrokerHAStatus                    RequestCode = 907    // 5.x
	ResetMasterFlushOffset               RequestCode = 908    // 5.x
	ControllerAlterSyncStateSet          RequestCode = 1001   // 5.x
	ControllerElectMaster                RequestCode = 1002   // 5.x
	ControllerRegisterBroker             RequestCode = 1003   // 5.x
	ControllerGetReplicaInfo             RequestCode = 1004   // 5.x
	ControllerGetMetadataInfo            RequestCode = 1005   // 5.x
	ControllerGetSyncStateData           RequestCode = 1006   // 5.x
	GetBrokerEpochCache                  RequestCode = 1007   // 5.x
	NotifyBrokerRoleChanged              RequestCode = 1008   // 5.x
	UpdateControllerConfig               RequestCode = 1009   // 5.x
	GetControllerConfig                  RequestCode = 1010   // 5.x
	CleanBrokerData                      RequestCode = 1011   // 5.x
	ControllerGetNextBrokerID            RequestCode = 1012   // 5.x
	ControllerApplyBrokerID              RequestCode = 1013   // 5.x
	UpdateColdDataFlowCtrConfig          RequestCode = 2001   // 5.x
	RemoveColdDataFlowCtrConfig          RequestCode = 2002   // 5.x
	GetColdDataFlowCtrInfo               RequestCode = 2003   // 5.x
	SetCommitLogReadMode                 RequestCode = 2004   // 5.x
	AuthCreateUser                       RequestCode = 3001   // 5.x
	AuthUpdateUser                       RequestCode = 3002   // 5.x
	AuthDeleteUser                       RequestCode = 3003   // 5.x
	AuthGetUser                          RequestCode = 3004   // 5.x
	AuthListUser                         RequestCode = 3005   // 5.x
	AuthCreateACL                        RequestCode = 3006   // 5.x
	AuthUpdateACL                        RequestCode = 3007   // 5.x
	AuthDeleteACL                        RequestCode = 3008   // 5.x
	AuthGetACL                           RequestCode = 3009   // 5.x
	AuthListACL                          RequestCode = 3010   // 5.x
	PopMessage                           RequestCode = 200050 // 5.x
	AckMessage                           RequestCode = 200051 // 5.x
	PeekMessage                          RequestCode = 200052 // 5.x
	ChangeMessageInvisibleTime           RequestCode = 200053 // 5.x
	Notification                         RequestCode = 200054 // 5.x
	PollingInfo                          RequestCode = 200055 // 5.x
	PopRollback                          RequestCode = 200056 // 5.x
	BatchAckMessage                      RequestCode = 200151 // 5.x
)

// RocketRaft's own request codes: not RocketMQ's (its tables leave 31000-31999 unused), private to this
// broker and its tools. They fit the int16 code of a ROCKETMQ binary header.
const (
	// GetRaftStatus asks a broker in the Raft mode for its node's status (JSON body: protocol.RaftStatus);
	// SYSTEM_ERROR in classic mode. mqadmin getRaftStatus.
	GetRaftStatus RequestCode = 31001 // ours
	// TransferRaftLeadership asks the Raft leader to hand leadership to ext "targetId" (a dLegerSelfId;
	// empty: the most up-to-date follower) and answers once Raft did. mqadmin transferLeadership.
	TransferRaftLeadership RequestCode = 31002 // ours
	// AddRaftPeer asks the Raft leader to add node ext "peerId" at Raft address ext "peerAddr" (host:port)
	// as a voter and answers once the new configuration is committed (JSON body: the members).
	// mqadmin addRaftPeer.
	AddRaftPeer RequestCode = 31003 // ours
	// RemoveRaftPeer asks the Raft leader to remove node ext "peerId" from its group and answers once the
	// new configuration is committed (JSON body: the members). The leader refuses to remove itself.
	// mqadmin removeRaftPeer.
	RemoveRaftPeer RequestCode = 31004 // ours
)

// Response codes.
const (
	RPCTimeOut                           ResponseCode = -1006 // 5.x
	RPCSendToChannelFailed               ResponseCode = -1004 // 5.x
	RPCAddrIsNull                        ResponseCode = -1002 // 5.x
	RPCUnknown                           ResponseCode = -1000 // 5.x
	Success                              ResponseCode = 0
	SystemError                          ResponseCode = 1
	SystemBusy                           ResponseCode = 2
	RequestCodeNotSupported              ResponseCode = 3
	TransactionFailed                    ResponseCode = 4
	FlushDiskTimeout                     ResponseCode = 10
	SlaveNotAvailable                    ResponseCode = 11
	FlushSlaveTimeout                    ResponseCode = 12
	MessageIllegal                       ResponseCode = 13
	ServiceNotAvailable                  ResponseCode = 14
	VersionNotSupported                  ResponseCode = 15
	NoPermission                         ResponseCode = 16
	TopicNotExist                        ResponseCode = 17
	TopicExistAlready                    ResponseCode = 18
	PullNotFound                         ResponseCode = 19
	PullRetryImmediately                 ResponseCode = 20
	PullOffsetMoved                      ResponseCode = 21
	QueryNotFound                        ResponseCode = 22
	SubscriptionParseFailed              ResponseCode = 23
	SubscriptionNotExist                 ResponseCode = 24
	SubscriptionNotLatest                ResponseCode = 25
	SubscriptionGroupNotExist            ResponseCode = 26
	FilterDataNotExist                   ResponseCode = 27
	FilterDataNotLatest                  ResponseCode = 28
	InvalidParameter                     ResponseCode = 29 // 5.x
	TransactionShouldCommit              ResponseCode = 200
	TransactionShouldRollback            ResponseCode = 201
	TransactionStateUnknow               ResponseCode = 202
	TransactionStateGroupWrong           ResponseCode = 203
	NoBuyerID                            ResponseCode = 204
	NotInCurrentUnit                     ResponseCode = 205
	ConsumerNotOnline                    ResponseCode = 206
	ConsumeMsgTimeout                    ResponseCode = 207
	NoMessage                            ResponseCode = 208
	UpdateAndCreateACLConfigFailed       ResponseCode = 209 // 4.x
	PollingFull                          ResponseCode = 209 // 5.x; the same number as the 4.x code above
	DeleteACLConfigFailed                ResponseCode = 210 // 4.x
	PollingTimeout                       ResponseCode = 210 // 5.x; the same number as the 4.x code above
	UpdateGlobalWhiteAddrsConfigFailed   ResponseCode = 211 // 4.x
	BrokerNotExist                       ResponseCode = 211 // 5.x; the same number as the 4.x code above
	BrokerDispatchNotComplete            ResponseCode = 212 // 5.x
	BroadcastConsumption                 ResponseCode = 213 // 5.x
	FlowControl                          ResponseCode = 215
	NotLeaderForQueue                    ResponseCode = 501  // 5.x
	IllegalOperation                     ResponseCode = 604  // 5.x
	GoAway                               ResponseCode = 1500 // 5.x
	ControllerFencedMasterEpoch          ResponseCode = 2000 // 5.x
	ControllerFencedSyncStateSetEpoch    ResponseCode = 2001 // 5.x
	ControllerInvalidMaster              ResponseCode = 2002 // 5.x
	ControllerInvalidReplicas            ResponseCode = 2003 // 5.x
	ControllerMasterNotAvailable         ResponseCode = 2004 // 5.x
	ControllerInvalidRequest             ResponseCode = 2005 // 5.x
	ControllerBrokerNotAlive             ResponseCode = 2006 // 5.x
	ControllerNotLeader                  ResponseCode = 2007 // 5.x
	ControllerBrokerMetadataNotExist     ResponseCode = 2008 // 5.x
	ControllerInvalidCleanBrokerMetadata ResponseCode = 2009 // 5.x
	ControllerBrokerNeedToBeRegistered   ResponseCode = 2010 // 5.x
	ControllerMasterStillExist           ResponseCode = 2011 // 5.x
	ControllerElectMasterFailed          ResponseCode = 2012 // 5.x
	ControllerAlterSyncStateSetFailed    ResponseCode = 2013 // 5.x
	ControllerBrokerIDInvalid            ResponseCode = 2014 // 5.x
	ControllerJRaftInternalError         ResponseCode = 2015 // 5.x
	ControllerBrokerLiveInfoNotExists    ResponseCode = 2016 // 5.x
	UserNotExist                         ResponseCode = 3001 // 5.x
	PolicyNotExist                       ResponseCode = 3002 // 5.x
)

var requestCodeNames = map[RequestCode]string{
	SendMessage:                          "SEND_MESSAGE",
	PullMessage:                          "PULL_MESSAGE",
	QueryMessage:                         "QUERY_MESSAGE",
	QueryBrokerOffset:                    "QUERY_BROKER_OFFSET",
	QueryConsumerOffset:                  "QUERY_CONSUMER_OFFSET",
	UpdateConsumerOffset:                 "UPDATE_CONSUMER_OFFSET",
	UpdateAndCreateTopic:                 "UPDATE_AND_CREATE_TOPIC",
	UpdateAndCreateTopicList:             "UPDATE_AND_CREATE_TOPIC_LIST",
	GetAllTopicConfig:                    "GET_ALL_TOPIC_CONFIG",
	GetTopicConfigList:                   "GET_TOPIC_CONFIG_LIST",
	GetTopicNameList:                     "GET_TOPIC_NAME_LIST",
	UpdateBrokerConfig:                   "UPDATE_BROKER_CONFIG",
	GetBrokerConfig:                      "GET_BROKER_CONFIG",
	TriggerDeleteFiles:                   "TRIGGER_DELETE_FILES",
	GetBrokerRuntimeInfo:                 "GET_BROKER_RUNTIME_INFO",
	SearchOffsetByTimestamp:              "SEARCH_OFFSET_BY_TIMESTAMP",
	GetMaxOffset:                         "GET_MAX_OFFSET",
	GetMinOffset:                         "GET_MIN_OFFSET",
	GetEarliestMsgStoreTime:              "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID:                      "VIEW_MESSAGE_BY_ID",
	HeartBeat:                            "HEART_BEAT",
	UnregisterClient:                     "UNREGISTER_CLIENT",
	ConsumerSendMsgBack:                  "CONSUMER_SEND_MSG_BACK",
	EndTransaction:                       "END_TRANSACTION",
	GetConsumerListByGroup:               "GET_CONSUMER_LIST_BY_GROUP",
	CheckTransactionState:                "CHECK_TRANSACTION_STATE",
	NotifyConsumerIDsChanged:             "NOTIFY_CONSUMER_IDS_CHANGED",
	LockBatchMQ:                          "LOCK_BATCH_MQ",
	UnlockBatchMQ:                        "UNLOCK_BATCH_MQ",
	GetAllConsumerOffset:                 "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset:                    "GET_ALL_DELAY_OFFSET",
	CheckClientConfig:                    "CHECK_CLIENT_CONFIG",
	GetClientConfig:                      "GET_CLIENT_CONFIG",
	UpdateAndCreateACLConfig:             "UPDATE_AND_CREATE_ACL_CONFIG",
	DeleteACLConfig:                      "DELETE_ACL_CONFIG",
	GetBrokerClusterACLInfo:              "GET_BROKER_CLUSTER_ACL_INFO",
	UpdateGlobalWhiteAddrsConfig:         "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	GetBrokerClusterACLConfig:            "GET_BROKER_CLUSTER_ACL_CONFIG",
	GetTimerCheckPoint:                   "GET_TIMER_CHECK_POINT",
	GetTimerMetrics:                      "GET_TIMER_METRICS",
	PutKVConfig:                          "PUT_KV_CONFIG",
	GetKVConfig:                          "GET_KV_CONFIG",
	DeleteKVConfig:                       "DELETE_KV_CONFIG",
	RegisterBroker:                       "REGISTER_BROKER",
	UnregisterBroker:                     "UNREGISTER_BROKER",
	GetRouteInfoByTopic:                  "GET_ROUTEINFO_BY_TOPIC",
	GetBrokerClusterInfo:                 "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscriptionGroup:     "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:        "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	GetTopicStatsInfo:                    "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList:            "GET_CONSUMER_CONNECTION_LIST",
	GetProducerConnectionList:            "GET_PRODUCER_CONNECTION_LIST",
	WipeWritePermOfBroker:                "WIPE_WRITE_PERM_OF_BROKER",
	GetAllTopicListFromNameServer:        "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	DeleteSubscriptionGroup:              "DELETE_SUBSCRIPTIONGROUP",
	GetConsumeStats:                      "GET_CONSUME_STATS",
	SuspendConsumer:                      "SUSPEND_CONSUMER",
	ResumeConsumer:                       "RESUME_CONSUMER",
	ResetConsumerOffsetInConsumer:        "RESET_CONSUMER_OFFSET_IN_CONSUMER",
	ResetConsumerOffsetInBroker:          "RESET_CONSUMER_OFFSET_IN_BROKER",
	AdjustConsumerThreadPool:             "ADJUST_CONSUMER_THREAD_POOL",
	WhoConsumeTheMessage:                 "WHO_CONSUME_THE_MESSAGE",
	DeleteTopicInBroker:                  "DELETE_TOPIC_IN_BROKER",
	DeleteTopicInNamesrv:                 "DELETE_TOPIC_IN_NAMESRV",
	RegisterTopicInNamesrv:               "REGISTER_TOPIC_IN_NAMESRV",
	GetKVListByNamespace:                 "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset:            "RESET_CONSUMER_CLIENT_OFFSET",
	GetConsumerStatusFromClient:          "GET_CONSUMER_STATUS_FROM_CLIENT",
	InvokeBrokerToResetOffset:            "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStatus:      "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	GetTopicsByCluster:                   "GET_TOPICS_BY_CLUSTER",
	UpdateAndCreateSubscriptionGroupList: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST",
	QueryTopicConsumeByWho:               "QUERY_TOPIC_CONSUME_BY_WHO",
	RegisterFilterServer:                 "REGISTER_FILTER_SERVER",
	RegisterMessageFilterClass:           "REGISTER_MESSAGE_FILTER_CLASS",
	QueryConsumeTimeSpan:                 "QUERY_CONSUME_TIME_SPAN",
	GetSystemTopicListFromNs:             "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	GetSystemTopicListFromBroker:         "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	CleanExpiredConsumeQueue:             "CLEAN_EXPIRED_CONSUMEQUEUE",
	GetConsumerRunningInfo:               "GET_CONSUMER_RUNNING_INFO",
	QueryCorrectionOffset:                "QUERY_CORRECTION_OFFSET",
	ConsumeMessageDirectly:               "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2:                        "SEND_MESSAGE_V2",
	GetUnitTopicList:                     "GET_UNIT_TOPIC_LIST",
	GetHasUnitSubTopicList:               "GET_HAS_UNIT_SUB_TOPIC_LIST",
	GetHasUnitSubUnUnitTopicList:         "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
	CloneGroupOffset:                     "CLONE_GROUP_OFFSET",
	ViewBrokerStatsData:                  "VIEW_BROKER_STATS_DATA",
	CleanUnusedTopic:                     "CLEAN_UNUSED_TOPIC",
	GetBrokerConsumeStats:                "GET_BROKER_CONSUME_STATS",
	UpdateNamesrvConfig:                  "UPDATE_NAMESRV_CONFIG",
	GetNamesrvConfig:                     "GET_NAMESRV_CONFIG",
	SendBatchMessage:                     "SEND_BATCH_MESSAGE",
	QueryConsumeQueue:                    "QUERY_CONSUME_QUEUE",
	QueryDataVersion:                     "QUERY_DATA_VERSION",
	ResumeCheckHalfMessage:               "RESUME_CHECK_HALF_MESSAGE",
	SendReplyMessage:                     "SEND_REPLY_MESSAGE",
	SendReplyMessageV2:                   "SEND_REPLY_MESSAGE_V2",
	PushReplyMessageToClient:             "PUSH_REPLY_MESSAGE_TO_CLIENT",
	AddWritePermOfBroker:                 "ADD_WRITE_PERM_OF_BROKER",
	GetAllProducerInfo:                   "GET_ALL_PRODUCER_INFO",
	DeleteExpiredCommitLog:               "DELETE_EXPIRED_COMMITLOG",
	QueryTopicsByConsumer:                "QUERY_TOPICS_BY_CONSUMER",
	QuerySubscriptionByConsumer:          "QUERY_SUBSCRIPTION_BY_CONSUMER",
	GetTopicConfig:                       "GET_TOPIC_CONFIG",
	GetSubscriptionGroupConfig:           "GET_SUBSCRIPTIONGROUP_CONFIG",
	UpdateAndGetGroupForbidden:           "UPDATE_AND_GET_GROUP_FORBIDDEN",
	CheckRocksDBCQWriteProgress:          "CHECK_ROCKSDB_CQ_WRITE_PROGRESS",
	ExportRocksDBConfigToJSON:            "EXPORT_ROCKSDB_CONFIG_TO_JSON",
	LitePullMessage:                      "LITE_PULL_MESSAGE",
	RecallMessage:                        "RECALL_MESSAGE",
	QueryAssignment:                      "QUERY_ASSIGNMENT",
	SetMessageRequestMode:                "SET_MESSAGE_REQUEST_MODE",
	GetAllMessageRequestMode:             "GET_ALL_MESSAGE_REQUEST_MODE",
	UpdateAndCreateStaticTopic:           "UPDATE_AND_CREATE_STATIC_TOPIC",
	GetBrokerMemberGroup:                 "GET_BROKER_MEMBER_GROUP",
	AddBroker:                            "ADD_BROKER",
	RemoveBroker:                         "REMOVE_BROKER",
	BrokerHeartbeat:                      "BROKER_HEARTBEAT",
	GetRaftStatus:                        "GET_RAFT_STATUS",
	TransferRaftLeadership:               "TRANSFER_RAFT_LEADERSHIP",
	AddRaftPeer:                          "ADD_RAFT_PEER",
	RemoveRaftPeer:                       "REMOVE_RAFT_PEER",
	NotifyMinBrokerIDChange:              "NOTIFY_MIN_BROKER_ID_CHANGE",
	ExchangeBrokerHAInfo:                 "EXCHANGE_BROKER_HA_INFO",
	GetBrokerHAStatus:                    "GET_BROKER_HA_STATUS",
	ResetMasterFlushOffset:               "RESET_MASTER_FLUSH_OFFSET",
	ControllerAlterSyncStateSet:          "CONTROLLER_ALTER_SYNC_STATE_SET",
	ControllerElectMaster:                "CONTROLLER_ELECT_MASTER",
	ControllerRegisterBroker:             "CONTROLLER_REGISTER_BROKER",
	ControllerGetReplicaInfo:             "CONTROLLER_GET_REPLICA_INFO",
	ControllerGetMetadataInfo:            "CONTROLLER_GET_METADATA_INFO",
	ControllerGetSyncStateData:           "CONTROLLER_GET_SYNC_STATE_DATA",
	GetBrokerEpochCache:                  "GET_BROKER_EPOCH_CACHE",
	NotifyBrokerRoleChanged:              "NOTIFY_BROKER_ROLE_CHANGED",
	UpdateControllerConfig:               "UPDATE_CONTROLLER_CONFIG",
	GetControllerConfig:                  "GET_CONTROLLER_CONFIG",
	CleanBrokerData:                      "CLEAN_BROKER_DATA",
	ControllerGetNextBrokerID:            "CONTROLLER_GET_NEXT_BROKER_ID",
	ControllerApplyBrokerID:              "CONTROLLER_APPLY_BROKER_ID",
	UpdateColdDataFlowCtrConfig:          "UPDATE_COLD_DATA_FLOW_CTR_CONFIG",
	RemoveColdDataFlowCtrConfig:          "REMOVE_COLD_DATA_FLOW_CTR_CONFIG",
	GetColdDataFlowCtrInfo:               "GET_COLD_DATA_FLOW_CTR_INFO",
	SetCommitLogReadMode:                 "SET_COMMITLOG_READ_MODE",
	AuthCreateUser:                       "AUTH_CREATE_USER",
	AuthUpdateUser:                       "AUTH_UPDATE_USER",
	AuthDeleteUser:                       "AUTH_DELETE_USER",
	AuthGetUser:                          "AUTH_GET_USER",
	AuthListUser:                         "AUTH_LIST_USER",
	AuthCreateACL:                        "AUTH_CREATE_ACL",
	AuthUpdateACL:                        "AUTH_UPDATE_ACL",
	AuthDeleteACL:                        "AUTH_DELETE_ACL",
	AuthGetACL:                           "AUTH_GET_ACL",
	AuthListACL:                          "AUTH_LIST_ACL",
	PopMessage:                           "POP_MESSAGE",
	AckMessage:                           "ACK_MESSAGE",
	PeekMessage:                          "PEEK_MESSAGE",
	ChangeMessageInvisibleTime:           "CHANGE_MESSAGE_INVISIBLETIME",
	Notification:                         "NOTIFICATION",
	PollingInfo:                          "POLLING_INFO",
	PopRollback:                          "POP_ROLLBACK",
	BatchAckMessage:                      "BATCH_ACK_MESSAGE",
}

var responseCodeNames = map[ResponseCode]string{
	RPCTimeOut:                           "RPC_TIME_OUT",
	RPCSendToChannelFailed:               "RPC_SEND_TO_CHANNEL_FAILED",
	RPCAddrIsNull:                        "RPC_ADDR_IS_NULL",
	RPCUnknown:                           "RPC_UNKNOWN",
	Success:                              "SUCCESS",
	SystemError:                          "SYSTEM_ERROR",
	SystemBusy:                           "SYSTEM_BUSY",
	RequestCodeNotSupported:              "REQUEST_CODE_NOT_SUPPORTED",
	TransactionFailed:                    "TRANSACTION_FAILED",
	FlushDiskTimeout:                     "FLUSH_DISK_TIMEOUT",
	SlaveNotAvailable:                    "SLAVE_NOT_AVAILABLE",
	FlushSlaveTimeout:                    "FLUSH_SLAVE_TIMEOUT",
	MessageIllegal:                       "MESSAGE_ILLEGAL",
	ServiceNotAvailable:                  "SERVICE_NOT_AVAILABLE",
	VersionNotSupported:                  "VERSION_NOT_SUPPORTED",
	NoPermission:                         "NO_PERMISSION",
	TopicNotExist:                        "TOPIC_NOT_EXIST",
	TopicExistAlready:                    "TOPIC_EXIST_ALREADY",
	PullNotFound:                         "PULL_NOT_FOUND",
	PullRetryImmediately:                 "PULL_RETRY_IMMEDIATELY",
	PullOffsetMoved:                      "PULL_OFFSET_MOVED",
	QueryNotFound:                        "QUERY_NOT_FOUND",
	SubscriptionParseFailed:              "SUBSCRIPTION_PARSE_FAILED",
	SubscriptionNotExist:                 "SUBSCRIPTION_NOT_EXIST",
	SubscriptionNotLatest:                "SUBSCRIPTION_NOT_LATEST",
	SubscriptionGroupNotExist:            "SUBSCRIPTION_GROUP_NOT_EXIST",
	FilterDataNotExist:                   "FILTER_DATA_NOT_EXIST",
	FilterDataNotLatest:                  "FILTER_DATA_NOT_LATEST",
	InvalidParameter:                     "INVALID_PARAMETER",
	TransactionShouldCommit:              "TRANSACTION_SHOULD_COMMIT",
	TransactionShouldRollback:            "TRANSACTION_SHOULD_ROLLBACK",
	TransactionStateUnknow:               "TRANSACTION_STATE_UNKNOW",
	TransactionStateGroupWrong:           "TRANSACTION_STATE_GROUP_WRONG",
	NoBuyerID:                            "NO_BUYER_ID",
	NotInCurrentUnit:                     "NOT_IN_CURRENT_UNIT",
	ConsumerNotOnline:                    "CONSUMER_NOT_ONLINE",
	ConsumeMsgTimeout:                    "CONSUME_MSG_TIMEOUT",
	NoMessage:                            "NO_MESSAGE",
	UpdateAndCreateACLConfigFailed:       "UPDATE_AND_CREATE_ACL_CONFIG_FAILED",
	DeleteACLConfigFailed:                "DELETE_ACL_CONFIG_FAILED",
	UpdateGlobalWhiteAddrsConfigFailed:   "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED",
	BrokerDispatchNotComplete:            "BROKER_DISPATCH_NOT_COMPLETE",
	BroadcastConsumption:                 "BROADCAST_CONSUMPTION",
	FlowControl:                          "FLOW_CONTROL",
	NotLeaderForQueue:                    "NOT_LEADER_FOR_QUEUE",
	IllegalOperation:                     "ILLEGAL_OPERATION",
	GoAway:                               "GO_AWAY",
	ControllerFencedMasterEpoch:          "CONTROLLER_FENCED_MASTER_EPOCH",
	ControllerFencedSyncStateSetEpoch:    "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
	ControllerInvalidMaster:              "CONTROLLER_INVALID_MASTER",
	ControllerInvalidReplicas:            "CONTROLLER_INVALID_REPLICAS",
	ControllerMasterNotAvailable:         "CONTROLLER_MASTER_NOT_AVAILABLE",
	ControllerInvalidRequest:             "CONTROLLER_INVALID_REQUEST",
	ControllerBrokerNotAlive:             "CONTROLLER_BROKER_NOT_ALIVE",
	ControllerNotLeader:                  "CONTROLLER_NOT_LEADER",
	ControllerBrokerMetadataNotExist:     "CONTROLLER_BROKER_METADATA_NOT_EXIST",
	ControllerInvalidCleanBrokerMetadata: "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
	ControllerBrokerNeedToBeRegistered:   "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
	ControllerMasterStillExist:           "CONTROLLER_MASTER_STILL_EXIST",
	ControllerElectMasterFailed:          "CONTROLLER_ELECT_MASTER_FAILED",
	ControllerAlterSyncStateSetFailed:    "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
	ControllerBrokerIDInvalid:            "CONTROLLER_BROKER_ID_INVALID",
	ControllerJRaftInternalError:         "CONTROLLER_JRAFT_INTERNAL_ERROR",
	ControllerBrokerLiveInfoNotExists:    "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
	UserNotExist:                         "USER_NOT_EXIST",
	PolicyNotExist:                       "POLICY_NOT_EXIST",
}

// Language codes (LanguageCode.java).
const (
	LanguageJava   LanguageCode = 0
	LanguageCPP    LanguageCode = 1
	LanguageDotNet LanguageCode = 2
	LanguagePython LanguageCode = 3
	LanguageDelphi LanguageCode = 4
	LanguageErlang LanguageCode = 5
	LanguageRuby   LanguageCode = 6
	LanguageOther  LanguageCode = 7
	LanguageHTTP   LanguageCode = 8
	LanguageGo     LanguageCode = 9
	LanguagePHP    LanguageCode = 10
	LanguageOMS    LanguageCode = 11
	LanguageRust   LanguageCode = 12
	LanguageNodeJS LanguageCode = 13
)

var languageNames = [...]string{"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO",
	"PHP", "OMS", "RUST", "NODE_JS"}

// String returns RocketMQ's name of the code ("SEND_MESSAGE"), or the number when the table does not know it.
func (c RequestCode) String() string {
	if n, ok := requestCodeNames[c]; ok {
		return n
	}
	return strconv.Itoa(int(c))
}

// String returns RocketMQ's name of the code ("TOPIC_NOT_EXIST"), or the number when the table does not know it.
// Where 4.x and 5.x gave one number two names (209, 210, 211) it returns the 4.x name.
func (c ResponseCode) String() string {
	if n, ok := responseCodeNames[c]; ok {
		return n
	}
	return strconv.Itoa(int(c))
}

// String returns the name a JSON header carries ("GO"), or the number for a byte the table does not know.
func (l LanguageCode) String() string {
	if int(l) < len(languageNames) {
		return languageNames[l]
	}
	return strconv.Itoa(int(l))
}

// ParseLanguage maps a JSON header's language name to its byte. A decimal number is taken as the byte itself;
// anything else is reported as not ok.
func ParseLanguage(name string) (LanguageCode, bool) {
	for i, n := range languageNames {
		if n == name {
			return LanguageCode(i), true
		}
	}
	if v, err := strconv.ParseUint(name, 10, 8); err == nil {
		return LanguageCode(v), true
	}
	return LanguageOther, false
}

// PULL_MESSAGE request sysFlag bits (RocketMQ's PullSysFlag). Wire format: never change.
const (
	PullFlagCommitOffset = 1 << 0 // commitOffset is the consumer's progress: store it
	PullFlagSuspend      = 1 << 1 // the broker may hold the pull (long polling)
	PullFlagSubscription = 1 << 2 // the subscription is in the request, not taken from the heartbeat
	PullFlagClassFilter  = 1 << 3 // class filter (unused)
)
