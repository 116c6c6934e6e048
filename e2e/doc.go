// Package e2e holds the end-to-end tests: the official Apache RocketMQ Go client
// (github.com/apache/rocketmq-client-go/v2), unchanged, against name servers and brokers started in the
// test process by internal/cluster, over the real wire protocol on 127.0.0.1.
package e2e
