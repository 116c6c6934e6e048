// Package e2e holds the end-to-end tests: the official Apache RocketMQ Go client
// (github.com/apache/rocketmq-client-go/v2), unchanged, against name servers and brokers started in the
// test process by app/cluster, over the real wire protocol on 127.0.0.1 (127.0.0.11-13 and
// 127.0.0.100 for the Raft master's virtual address). Tests that kill a broker run it as a child process
// of the test binary (TestMain's child modes: broker, name server, producer); TestRaftVIPNetns, as root,
// runs them in network namespaces of its own, joined by a bridge, and removes them at the end.
//
// grpc_nodejs_test.go drives the official RocketMQ 5 Node.js client (rocketmq-client-nodejs from npm,
// installed into e2e/nodejs by make test-deps; e2e/nodejs/v5client.js is its part) against the gRPC endpoint:
// a broker's own (enableProxy) and the proxy in front of two broker groups; without node or npm those tests
// skip and say so.
package e2e
