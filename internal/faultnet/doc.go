// Package faultnet is a fault-injecting TCP proxy for tests and the chaos suite (internal/chaos): placed
// between two processes on one machine, it forwards bytes both ways and, on command, partitions the link,
// delays it, or cuts its connections. It stands in for netem and iptables, which this kind of machine
// lacks or which need privileges and network namespaces.
//
// # Modes
//
//	Pass       bytes flow both ways, as soon as they are read
//	Blackhole  nothing flows: the proxy stops reading both sides, so bytes wait in the kernel's socket
//	           buffers, writers block once those fill, and new connections are accepted but carry nothing —
//	           what an iptables DROP looks like to TCP endpoints (timeouts, not resets). Heal lets the held
//	           bytes through, as TCP's retransmissions would after a partition shorter than its timeouts.
//	Delay(d)   every chunk read is written d later (a fixed one-way latency, pipelined: throughput stays)
//
// Cut closes every open connection at once (both sides see a reset or EOF), whatever the mode.
//
// A Proxy is safe for concurrent use. Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
package faultnet
