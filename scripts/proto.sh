#!/usr/bin/env bash
# make proto: regenerates proxy/v2pb (the Go code of RocketMQ 5's gRPC protocol) from proto/apache/rocketmq/v2
# with protoc (Debian's protobuf-compiler; make test-deps installs it) and the Go plugins at the versions go.mod
# pins as tools (protoc-gen-go, protoc-gen-go-grpc). The generated code is committed, so building needs Go only;
# proxy's TestGeneratedCodeIsCurrent runs this into a temporary folder and compares.
#   scripts/proto.sh [OUT]   OUT: where the module-relative tree is written (default: the repository itself)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.}
command -v protoc >/dev/null || { echo "proto: protoc is missing (apt-get install protobuf-compiler, or make test-deps)" >&2; exit 1; }
# The well-known types (google/protobuf/duration.proto, timestamp.proto): protoc finds them in its include
# folder; Debian ships them in libprotobuf-dev.
wkt=/usr/include
[[ -f $wkt/google/protobuf/duration.proto ]] || wkt=$(dirname "$(command -v protoc)")/../include
[[ -f $wkt/google/protobuf/duration.proto ]] || {
  echo "proto: google/protobuf/duration.proto is missing: install libprotobuf-dev (Debian) or protoc's include folder (make test-deps)" >&2
  exit 1
}
plugins=$(mktemp -d)
trap 'rm -rf "$plugins"' EXIT
go build -o "$plugins/" google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
mkdir -p "$out"
protoc -I proto -I "$wkt" \
  --plugin=protoc-gen-go="$plugins/protoc-gen-go" --plugin=protoc-gen-go-grpc="$plugins/protoc-gen-go-grpc" \
  --go_out="$out" --go_opt=module=github.com/rocketraft/rocketraft \
  --go-grpc_out="$out" --go-grpc_opt=module=github.com/rocketraft/rocketraft \
  proto/apache/rocketmq/v2/*.proto
