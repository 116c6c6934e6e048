// Package faultnet is a fault-injecting TCP proxy for tests and the chaos suite (tools/chaos): placed
// between two processes on one machine, it forwards bytes both ways and, on command, partitions the link,
// delays it, partitions one direction only, makes it lossy, or cuts its connections. It stands in for netem
// and iptables, which this kind of machine lacks or which need privileges and network namespaces.
//
// # Modes
//
//	Pass       bytes flow both ways, as soon as they are read
//	Blackhole  nothing flows: the proxy stops reading both sides, so bytes wait in the kernel's socket
//	           buffers, writers block once those fill, and new connections are accepted but carry nothing —
//	           what an iptables DROP looks like to TCP endpoints (timeouts, not resets). Heal lets the held
//	           bytes through, as TCP's retransmissions would after a partition shorter than its timeouts.
//	Delay(d)   every chunk read is written d later (a fixed one-way latency, pipelined: throughput stays)
//	OneWay     BlackholeOneWay(dir): bytes going dir are held as by Blackhole, the other way passes. Forward
//	           is from the side that dialed the proxy to the target, Back the answers. New connections wait
//	           as under Blackhole (a TCP handshake needs both ways). What the endpoints see of a one-way
//	           DROP rule, with one difference: a real sender whose data is acknowledged through the dropped
//	           way retransmits and, after tcp_retries2 (about 15 minutes), resets; here it never does.
//	Lossy      SetLoss(LossConfig): what packet loss and reordering look like to TCP endpoints. A proxy
//	           works on byte streams, so it cannot drop or reorder packets (TCP would put them back); it
//	           shows what TCP makes of them instead: each chunk read may be held for a drawn stall (a lost
//	           segment waiting for its retransmission: RTO is 200 ms at least on Linux and doubles), every
//	           chunk waits up to Jitter more (reordered segments reassembled), and chunks behind a held one
//	           wait for it (head-of-line blocking: a stream keeps its order); with probability Reset a chunk
//	           closes both connections instead (a loss burst outlasting the retransmissions, or a reset
//	           from a middlebox). Real netem loss inside a network namespace needs root and is not used.
//
// Cut closes every open connection at once (both sides see a reset or EOF), whatever the mode.
//
// A Proxy is safe for concurrent use. Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
package faultnet
