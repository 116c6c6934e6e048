// Package client is the one native RocketMQ client of the tools (mqadmin, mqbench, mqchaos, the console)
// and of the test harness: name server lookups with failover, route to queues, send, pull, consumer
// offsets and the broker admin requests, over one remoting.Client (ACL signing with Config.Credentials, TLS
// with Config.TLS). It imports only the leaf packages remoting, protocol and message, so every tool builds
// for any GOOS; internal/archtest holds it to that.
//
// # Contracts
//
// A Client is safe for concurrent use by any number of goroutines, every method included; Close ends it
// and fails the calls in flight. Returned routes, results and maps belong to the caller.
//
// Errors. An answer other than SUCCESS is a *ResponseError (request, address, code, remark); match a code
// with HasCode(err, code) or errors.Is(err, &ResponseError{Code: code}). Anything else is a transport
// failure (dial, timeout, closed connection) naming the request and address, or a decode failure of the
// answer's body. Name server requests of a client without name servers return ErrNoNamesrv.
//
// Timeouts. Call, CallJSON and every typed request (Route, SendMessage, PullMessage, QueueOffset,
// RuntimeInfo, ...) wait at most Config.Timeout and ctx, whichever ends first. Invoke, InvokeAsync and
// InvokeOneway are bounded by ctx only and return the answer whatever its code: they are for long polls and
// for callers that time and classify answers themselves (mqbench, the chaos workload); build their requests
// with Request, SendCommand and PullCommand, and decode pulls with ParsePull.
//
// Name servers. NamesrvJSON (Route, ClusterInfo, TopicList) starts at the name server that answered last
// and goes on to the next only when one cannot be reached: a refusal is final, as the name servers share
// their data. EachNamesrv (deletions) asks every name server. RouteAt and ClusterInfoAt ask one.
//
// Method groups:
//
//	client.go   New, Close, CloseAddr, Request, Invoke*, Call, CallJSON, SplitAddrs
//	namesrv.go  NamesrvJSON, EachNamesrv, Route(At), ClusterInfo(At), TopicList, WaitRoute
//	route.go    Queue, RouteQueues (write queues of writable masters, read queues of readable ones), ReadAddr
//	send.go     Send, SendExt, SendCommand, SendMessage, SendResult, AppendBatchRecord
//	pull.go     Pull, PullExt, PullCommand, PullMessage, ParsePull, DecodeMessages
//	offset.go   QueueOffset (min, max, by time), QueryConsumerOffset, UpdateConsumerOffset
//	transaction.go  EndTransaction, OnCheckTransaction (CHECK_TRANSACTION_STATE), Heartbeat, Unregister
//	admin.go    RuntimeInfo, CreateTopic(Attributes), DeleteTopic(InNamesrvs), EnsureTopic, TopicConfigs,
//	            UpdateSubscriptionGroup
//	pop.go      RocketMQ 5's pop: Pop, PopMessage, ParsePop (receipt handles), AckMessage, BatchAck,
//	            ChangeInvisibleTime, Notification, PollingInfo, ConsumerSendMsgBack; always JSON headers (the codes exceed int16). PopMessage
//	            and Notification wait their poll time plus Config.Timeout. A receipt handle no longer in
//	            flight (acked, redelivered after its invisible time, replaced by ChangeInvisibleTime) is a
//	            *ResponseError with code NO_MESSAGE.
//	namesrv_admin.go SetBrokerWritePerm, NamesrvConfig, UpdateNamesrvConfig, PutKVConfig, DeleteKVConfig, KVConfig
//	stats.go    BrokerStats, ConsumeStats, BrokerConsumeStats, SubscriptionGroups
//	store_admin.go StoreMaintenance, QueryConsumeQueue
//	acl.go      UpdateACLAccount, DeleteACLAccount, UpdateGlobalWhiteAddrs, ACLVersion, ACLConfig (the broker's ACL file)
//	uniq.go     NewUniqID (UNIQ_KEY, RocketMQ's MessageClientIDSetter layout)
package client
