//go:build !linux

package raftlog

import "net"

// peerGone: the TCP state is read on Linux only; elsewhere a kept connection is used as it is,
// and an RPC that fails on one with the peer's close is sent again where that is safe
// (redialTransport, appendClient.AppendEntries).
func peerGone(net.Conn) bool { return false }
