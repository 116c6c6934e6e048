// Package v2pb is the Go code protoc generates from proto/apache/rocketmq/v2 (RocketMQ 5's gRPC protocol,
// apache.rocketmq.v2: the MessagingService and its messages). Do not edit the *.pb.go files: change the
// .proto files and run `make proto`; TestGeneratedCodeIsCurrent fails when the committed code differs from
// what they generate.
package v2pb
