# RocketRaft: a RocketMQ-compatible broker in Go.
GO       ?= go
BIN      := bin
DATA     ?= ./data
PKGS     := ./...
# gotestsum (a tool of go.mod) runs go test and ends its output with the failed tests, their output, and a
# test that hung until -timeout, by name: the tail of a CI log says what failed.
TESTSUM  ?= $(GO) tool gotestsum --format testname
# Every package runs under the race detector except e2e: the official Go client has data races of its own
# (its process-queue tree map, its shutdown), which would fail every run. Our servers' concurrency is raced
# by the wire-level tests in broker/, namesrv/ and remoting/.
RACE_PKGS ?= $(shell $(GO) list ./... | grep -v '/e2e$$')

.PHONY: all build run run-ha bench-ha bench-compare bench-scale scale-topics test test-deps cross vet unit fuzz bench clean deploy-check \
	deploy-local deploy-local-raft deploy-lint

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/...

# make run [DATA=./data]: a name server on 9876 and a broker on 10911, in the foreground (logs in $(DATA)/logs);
# when either exits, the other is stopped (scripts/run.sh).
run: build
	./scripts/run.sh "$(DATA)"

# make run-ha [DATA=./data]: a name server, a SYNC_MASTER broker-a and its slave on 127.0.0.1 (data in $(DATA)/ha),
# in the foreground.
run-ha: build
	./scripts/run-ha.sh "$(DATA)/ha"

# make run-raft [DATA=./data]: a name server and a three-node Raft group broker-a (enableDLegerCommitLog) on 127.0.0.1,
# data in $(DATA)/raft, in the foreground; it prints how to watch a failover (scripts/run-raft.sh; README "Raft mode").
.PHONY: run-raft chaos-raft
run-raft: build
	./scripts/run-raft.sh "$(DATA)/raft"

# make chaos-raft [KILLS=10]: SIGKILL of the Raft leader under the official Go client's load, KILLS times, with the
# history checked and the failover times logged, without and with the master's virtual address (e2e
# TestRaftKill9Leader and TestRaftKill9LeaderVIP; make test runs each with one kill and election timers doubled,
# this target with the product's default timers).
KILLS ?= 10
chaos-raft:
	ROCKETRAFT_RAFT_KILLS=$(KILLS) ROCKETRAFT_RAFT_TIMERS=default $(GO) test -count=1 -timeout 60m -run '^TestRaftKill9Leader(VIP)?$$' -v ./e2e

# make fleet-kill [FLEET_KILLS=6]: issue 39's multi-group test (e2e TestFleetRaftGroups) at full size: two name servers,
# three Raft groups of three broker processes, the official Go client through all groups; a name server stopped,
# then FLEET_KILLS leader kills in turn (make test runs one).
FLEET_KILLS ?= 6
.PHONY: fleet-kill
fleet-kill:
	ROCKETRAFT_FLEET_KILLS=$(FLEET_KILLS) $(GO) test -count=1 -timeout 60m -run '^TestFleetRaftGroups$$' -v ./e2e

# make bench-ha: produce msgs/s and p99 with no replication, ASYNC_MASTER and SYNC_MASTER (scripts/bench-ha.sh).
bench-ha:
	./scripts/bench-ha.sh

# make bench-compare [DURATION=60s ROWS="..."]: our brokers next to NATS JetStream on loopback, same workload, plus the
# disk's raw figures, one table with ratios (scripts/bench-compare.sh; README "Benchmarks").
bench-compare:
	./scripts/bench-compare.sh

# make bench-namesrv [NS_CPU=0 GEN_CPU=1 FLEET="--spread 0 --rate 17000 ..."]: issue 39's fleet simulator at full size
# (mqbench namesrv: 100 groups x 3 brokers with 1,000 topics each, 1,000 client connections asking 17,000 routes/s,
# the stand-in's floor first, churn, 2,000 idle connections, a restart) against bin/mqnamesrv pinned to NS_CPU,
# the simulator on GEN_CPU; FLEET adds or overrides flags (--spread 0: every topic on all 100 groups).
NS_CPU ?= 0
GEN_CPU ?= 1
FLEET ?=
.PHONY: bench-namesrv
bench-namesrv: build
	taskset -c $(GEN_CPU) $(BIN)/mqbench namesrv --start $(BIN)/mqnamesrv --cpu $(NS_CPU) --idle-conns 2000 \
		--churn topic-create,master-change,broker-kill,reconnect-storm,restart $(FLEET)

# make bench-scale [DURATION=60s BACKLOG_GIB=10 PARTS="topics recovery drain"]: one broker's throughput over 1, 100
# and 1,000 topics, time to serving after SIGKILL with 1 and 10 GiB of CommitLog, and a cold backlog drained in
# MB/s next to the disk's raw read (scripts/bench-scale.sh; needs root for drop_caches, ~25 GiB free disk).
bench-scale:
	./scripts/bench-scale.sh

# make scale-topics [TOPICS=10000]: issue 16's many-topics run (e2e TestScaleTopics): a SYNC_FLUSH broker
# process with TOPICS topics x 8 queues created one by one, a message to each, SIGTERM and restart, a second
# message to each, SIGKILL and restart, everything pulled back; prints the times and the broker's mappings,
# open files and resident memory. Long (minutes), not part of make test.
TOPICS ?= 10000
scale-topics:
	ROCKETRAFT_SCALE_TOPICS=$(TOPICS) nice go test ./e2e -run '^TestScaleTopics$$' -count=1 -v -timeout 60m

# make vet: gofmt -l over the tree (every file as gofmt writes it; the one that comes with $(GO)), then go vet.
vet:
	@unformatted="$$("$$($(GO) env GOROOT)/bin/gofmt" -l .)"; if [ -n "$$unformatted" ]; then \
		echo "gofmt: not formatted (gofmt -w FILE):"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

# make test: installs what it needs when missing (test-deps: ansible-core and Chromium with apt-get, as root or
# through password-less sudo; go mod download), vet, every package's tests under -race, then the end-to-end
# tests with the official Go client. It builds bin/ first: tools/chaos's short suite runs those binaries
# (CHAOS_BIN). deploy-check: the Ansible playbooks of deploy/. The end-to-end suite runs even when the race
# suite failed, so one failing unit test does not hide its results; the last lines say how each suite ended
# and name the failed tests of both (scripts/test-summary.sh), and make test fails when either failed.
test: test-deps vet build cross deploy-check
	@race=0; e2e=0; \
	CHAOS_BIN=$(CURDIR)/$(BIN) $(TESTSUM) --jsonfile $(BIN)/test-race.json -- -race -count=1 -timeout 15m $(RACE_PKGS) || race=$$?; \
	$(TESTSUM) --jsonfile $(BIN)/test-e2e.json -- -count=1 -timeout 12m ./e2e || e2e=$$?; \
	./scripts/test-summary.sh "race suite" $$race $(BIN)/test-race.json "e2e suite" $$e2e $(BIN)/test-e2e.json

# make cross: the client tools build for the platforms operators run them on (internal/archtest keeps the servers
# and hashicorp/raft out of them; the store calls Linux-only x/sys functions).
CROSS_TOOLS := ./cmd/mqadmin ./cmd/mqbench
cross:
	CGO_ENABLED=0 GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null $(CROSS_TOOLS)
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build -o /dev/null $(CROSS_TOOLS)

# make test-deps: ansible-core and Chromium from the Debian packages when missing, then go mod download
# (scripts/test-deps.sh).
test-deps:
	./scripts/test-deps.sh

# make deploy-check: ansible-playbook --syntax-check of every playbook in deploy/ and the rendered broker configs
# of the local inventories checked against bin/mqbroker (scripts/deploy-check.sh; needs ansible-core).
deploy-check: test-deps build deploy-lint
	./scripts/deploy-check.sh

# make deploy-lint: ansible-lint with its production profile over deploy/ (deploy/.ansible-lint; offline, ~15 s;
# Debian's ansible-lint, and ansible for the collection ansible.posix: make test-deps installs them).
deploy-lint: test-deps
	cd deploy && ansible-lint --nocolor

# make deploy-local [REPLICATION=sync]: deploys two masters with two slaves on this machine with deploy/'s
# playbooks (no systemd, no root; installs ansible-core if missing), deploys again expecting changed=0,
# produces and consumes, rotates the logs, rolling-restarts, produces and consumes again, stops (twice) (scripts/deploy-local.sh; a few minutes, not part of make test).
deploy-local: build
	./scripts/deploy-local.sh master-slave

# make deploy-local-raft: the same with the three-node Raft group (needs the Raft mode, issue 6).
deploy-local-raft: build
	./scripts/deploy-local.sh raft

FUZZTIME ?= 30s
# make fuzz [FUZZTIME=30s]: every fuzz target of the tree for FUZZTIME each (scripts/fuzz.sh): the remoting frames, the
# stored-record decoder, the Raft entry frames, the HA stream, the REGISTER_BROKER and fastjson bodies, SQL92.
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

bench:
	$(GO) test ./store -run '^$$' -bench . -benchtime 2s

# make proto: regenerates proxy/v2pb from proto/apache/rocketmq/v2 (RocketMQ 5's gRPC protocol) with protoc and the
# plugin versions go.mod pins (scripts/proto.sh). The generated code is committed, so a build needs Go only;
# proxy/v2pb's TestGeneratedCodeIsCurrent (part of make test) fails when it differs from what the .proto files give.
.PHONY: proto
proto:
	./scripts/proto.sh

# make chaos [MODES="SYNC_MASTER:SYNC_FLUSH ASYNC_MASTER:ASYNC_FLUSH" DURATION=5m SEED=n]: the fault-injection
# suite, real processes under a seeded schedule of faults, then the checker (scripts/chaos.sh; README "Fault
# injection"). The short version runs in make test (tools/chaos TestShortSuite).
.PHONY: chaos
chaos:
	./scripts/chaos.sh

# make soak [SOAK_DURATION=1h SOAK_MODE=SYNC_MASTER:SYNC_FLUSH SEED=n]: make chaos's group, load and checker held for
# SOAK_DURATION with a fault every few minutes and a mixed workload of the official Go client beside it; fails on
# growth of memory, goroutines, open files or mappings beyond the bounds of docs/soak.md, or on a checker failure
# (scripts/soak.sh; README "Long runs").
.PHONY: soak
soak:
	./scripts/soak.sh

clean:
	rm -rf $(BIN)
