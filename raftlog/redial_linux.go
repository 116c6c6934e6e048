package raftlog

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerGone reports whether the peer of c has closed or reset the connection: the socket has
// left ESTABLISHED (CLOSE_WAIT once the peer's FIN arrived, CLOSE after a reset), whatever
// bytes may still wait to be read (a TLS peer's close_notify). One getsockopt(TCP_INFO); no
// byte is read. A connection this side closed counts as gone; one that is not TCP, never.
func peerGone(c net.Conn) bool {
	tc := tcpConnOf(c)
	if tc == nil {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return true
	}
	var state uint8
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		var info *unix.TCPInfo
		if info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); gerr == nil {
			state = info.State
		}
	}); err != nil {
		return true
	}
	return gerr == nil && state != unix.BPF_TCP_ESTABLISHED
}
