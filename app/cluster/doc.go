// Package cluster starts whole RocketRaft clusters inside one test process: name servers and brokers on
// 127.0.0.1 with free ports, data under t.TempDir(), logs to t.Log, everything stopped by t.Cleanup.
// One harness configured by an options struct, so every package can test against real servers over the
// real wire protocol without import cycles.
package cluster
