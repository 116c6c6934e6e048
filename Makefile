# RocketRaft: a RocketMQ-compatible broker in Go.
GO       ?= go
BIN      := bin
DATA     ?= ./data
PKGS     := ./...
# Packages whose tests run under the race detector (all with concurrency).
RACE_PKGS ?= ./...

.PHONY: all build run test vet unit fuzz bench clean

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/...

# make run [DATA=./data]: a name server on 9876 and a broker on 10911, in the foreground.
run: build
	./scripts/run.sh "$(DATA)"

vet:
	$(GO) vet $(PKGS)

# make test: vet, then every test (unit and end-to-end with the official Go client) under -race.
test: vet
	$(GO) test -race -count=1 -timeout 18m $(RACE_PKGS)

# Short fuzz runs of the decoders (longer: FUZZTIME=10m make fuzz).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./remoting -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME)

bench:
	$(GO) test ./store -run '^$$' -bench . -benchtime 2s

clean:
	rm -rf $(BIN)
