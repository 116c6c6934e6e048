// Package proxy is the gRPC endpoint of RocketMQ 5's clients: apache.rocketmq.v2.MessagingService
// (proxy/v2pb) on grpcServerPort (8081), served in front of the brokers through the one native client
// (package client, remoting to the brokers). The same Server runs in two modes, as RocketMQ 5's proxy does:
//
//   - local mode (Options.BrokerName set): inside a broker process (enableProxy=true); only that broker
//     group's queues are offered. While that broker is its group's master, the data path (sends, pops,
//     acks, changes of invisible time, offsets) calls it in process through Options.Local (local.go), as
//     RocketMQ 5's local mode calls the broker's processors: no connection, no request header, no copy of
//     a message body. Routes, transactions, recalls and the rest, and everything while the broker is not
//     the master (a Raft follower), go over remoting as in cluster mode.
//   - cluster mode: the mqproxy binary in front of every broker group the name servers route.
//
// # The calls (one file each)
//
//	route.go    QueryRoute (every queue, its permission and accepted types, each broker at the proxy's
//	            endpoint), QueryAssignment (one assignment per readable group, queue id -1)
//	send.go     SendMessage (normal, FIFO: the queue by the Java hash of the message group; delay / timed:
//	            TIMER_DELIVER_MS; transactional: a half message), EndTransaction, the check-back relay, and
//	            the heartbeats of the proxy's producer groups to the brokers
//	clients.go  Heartbeat, NotifyClientTermination, Telemetry (settings both ways; thread stack, verify message
//	            and orphaned-transaction commands out, their answers in)
//	receive.go  ReceiveMessage (the broker's pop consumption through the popper interface, long polling,
//	            ordered for groups with consumeMessageOrderly), AckMessage (one BATCH_ACK_MESSAGE per
//	            broker, a result per entry), ChangeInvisibleDuration,
//	            ForwardMessageToDeadLetterQueue, RecallMessage (RECALL_MESSAGE to the handle's broker)
//	renew.go    auto_renew receives (push consumers): the proxy renews the handles until the client answers
//	consumers.go  the v5 consumers registered at their brokers under their own client ids (HEART_BEAT as
//	            CONSUME_POP consumers; UNREGISTER_CLIENT when they end), so mqadmin and the console see them
//	pull.go     PullMessage, UpdateOffset, GetOffset, QueryOffset
//	auth.go     the ACL (v5 signatures checked by an Authorizer, acl.Validator's CheckV2)
//	convert.go  v2 messages to the stored properties and back
//	local.go    Local (the broker of local mode, in process) and brokers, which picks it or remoting
//
// # Transactions
//
// v5 producers have no producer group. A transactional message is stored with PGROUP rmq_proxy_tx_group_<topic>
// and the proxy heartbeats that group to the brokers of the topic while a producer publishing it is connected,
// so the broker's CHECK_TRANSACTION_STATE reaches the proxy, which relays it as a
// RecoverOrphanedTransactionCommand to such a producer's Telemetry stream. The transaction id handed to the
// producer is "commitLogOffset:halfQueueOffset:brokerName": EndTransaction needs nothing else, so any proxy
// ends any transaction and the proxy keeps no table.
//
// # Settings
//
// A client's settings on its Telemetry stream are answered at once with the server's (clients.go
// serverSettings), and once more after the client's next Heartbeat. The repeat is for
// rocketmq-client-nodejs 1.x: its startup writes its settings when it has the first topic's route, but
// listens for the answer only after it has the routes of all its topics; an answer that comes in between
// is dropped and startup waited for the client's 5-minute settings sync (e2e
// TestNodeProducerSlowRoutes). Its heartbeats run from before that wait, every 10 s.
//
// # Receipt handles
//
// The handle a client gets is the broker's (protocol.ExtraInfo, eight fields) plus the message's CommitLog
// offset as a ninth, as RocketMQ 5's proxy makes it: ForwardMessageToDeadLetterQueue needs the offset. For an
// auto-renewed message the client keeps its first handle; the proxy maps it to the one in force.
//
// # Guards
//
// A call goes through, in this fixed order: the TLS handshake (Options.TLS: the port speaks TLS only, with
// the policy's client certificates), the ACL (auth.go, Options.Auth: grpc.ChainUnaryInterceptor and
// ChainStreamInterceptor, so a refusal is PermissionDenied and no handler runs), then the call. Both are
// fixed by New from Options and nothing can replace or remove them; an interceptor added later (a metric)
// is appended to the same chains after the ACL, as the remoting servers' observers are (remoting/doc.go,
// "Interceptors"). Serve logs the port's line, as the remoting ports do (in a broker, tlsServerMode
// permissive and enforcing both make the port TLS only: broker/grpc.go):
//
//	gRPC endpoint serving addr=0.0.0.0:8081 tls=tls-only clientCerts=RequestClientCert guards=acl localBroker=broker-a
//
// # Speed
//
// A gRPC call has a price of its own, paid by client and server whatever is behind them: HTTP/2 frames,
// header decoding, a stream per call with flow control, a goroutine per call, and a writer goroutine the
// answer is handed to. bench_test.go's BenchmarkProduceFloor measures it: the same 1 KiB sends from the
// same clients against servers that store nothing and answer at once. On issue 38's machine (2 cores, load
// 12 to 15, three runs, medians) a send cost 33 us of CPU over remoting and 71 us over gRPC, client and server
// together. The floor is the price at the floor's concurrency, not a bound: with a store behind it more
// calls are in flight and their frames share writes, and BenchmarkProduce's rows in the same runs cost 60
// (remoting), 62 (local mode) and 121 (cluster mode: gRPC, then a remoting send). Out of process
// (make bench-compare at the same load), the broker's CPU per message was 2.4 to 3x in local mode what it
// was over remoting, and the client's as much again: on a machine whose cores client and broker share,
// msgs/s follow the sum.
//
// On a quiet machine (make bench-compare, nothing else running, docs/bench/compare-2026-12-07-quiet.txt)
// the picture is the same: 44,752 msgs/s over remoting, 16,285 through local mode (0.36x) and 8,678 through
// mqproxy (0.19x); the broker's CPU per message 19, 54 and 128 us, mqbench's 18, 50 and 66 us. Of a
// local-mode broker's 52 us (profile of the same rows, 30 s), gRPC took about 30: its reader goroutine
// (frames, hpack, a stream per call) 27 %, its call handling around ours (decoding the request, sending
// the answer) 16 %, its writer 13 %; our SendMessage 18 %, of which the broker's send down to the store's
// put 10 %; the store's own goroutines 9 %; system calls 19 % flat. So the 0.7x of issue 38 is out of
// reach while gRPC costs what it does here: with a broker whose own work cost nothing, gRPC's share of it
// (30 us) and mqbench's (50) would still be twice a whole remoting send (37).
//
// Much of that is the two processes sharing two cores, not gRPC's price alone. With the broker pinned to one
// core and mqbench to the other (make bench-compare PIN=0/1, quiet machine, five runs: 5e08d0a, 639cb61,
// then three after the change in local.go below; docs/bench/compare-2026-12-07-pinned.txt), a local-mode send
// cost the broker 27, 27, 30, 32 and 26 us and the client 23 to 31, where a remoting send cost 14 to 20 and 12
// to 20; grpc-send reached 0.51x and 0.61x async before the change, 0.64x, 0.63x and 0.69x after (27,247 to
// 35,243 msgs/s, async's own row moving between 43,415 and 65,070 with the machine), and mqproxy 0.20x and
// 0.27x. Unpinned, each process's idle processors spin and wake across the shared cores,
// and gRPC's hand-offs between goroutines (its reader, the call's worker, its writer) pay that most. Pinned,
// the broker's core is the limit (87 % of the machine busy), and of its 27 us (profile of the first run) gRPC's
// reader took 30 %, its call handling around ours 9 %, its writer 12 %: about 14 us, a whole remoting send's
// broker CPU; our SendMessage 18 % (the broker's send down to the store 9.5 %, a context.WithTimeout per call
// 4.5 %, dropped since: local.go), the store's goroutines 11 %. So the 0.7x is at the edge of what gRPC's own
// ~14 us leave: reached by none of the five runs (the best 0.69x). A sixth pinned run (2026-12-08, d82aa76,
// quiet; docs/bench/compare-2026-12-08-pinned.txt): 0.56x (36,894 against 66,062 msgs/s; broker 24 against 14
// us), mqproxy 0.23x.
//
// Receive + ack against pull: the rows' backlog of 100,000 messages (CONSUME_MESSAGES) is too short for pull,
// which drains it in about 0.17 s pinned, so the ratio moved with pull's start-up (0.43x, 0.37x, 0.22x, 0.16x in
// four runs). With a backlog of 1,000,000 (same day, pinned) pull ran at 929,138 msgs/s (1.0 us of broker CPU a
// message) and pop at 105,972 (8.9 us): 0.11x, below the 0.3x. A pop batch of 32 sends each message as
// its own gRPC response on the stream (the protocol's). A profile of BenchmarkConsume/grpc-local (which also
// holds the backlog's remoting sends) has the body digest (MD5, as Apache's proxy sends it) at 5 % of all; a
// profile of the pop row alone is still to be taken.
//
// What the endpoint does about the price: its calls run on stream workers (Options.StreamWorkers,
// grpc.NumStreamWorkers) whose stacks stay grown, where a call's own new goroutine grew its stack in
// gRPC's receive every time (runtime.copystack was 10 % of a local-mode broker's CPU under mqbench's 16
// senders, and is gone from the profile with workers; BenchmarkProduce/grpc-local's CPU per message, five
// interleaved pairs at load 12 to 15: median 119 us without, 103 us with); batches of acks are one request
// per broker (receive.go); local mode calls the broker in process (local.go).
//
// # Contracts
//
// A Server is safe for concurrent use; Close stops serving, ends the streams and waits for its goroutines.
// Calls answer their outcome in the response's Status (v2 codes; a broker's refusal keeps its remark); only
// an ACL refusal is a gRPC error (PermissionDenied).
package proxy
