package client

import (
	"crypto/rand"
	"net"
	"net/netip"

	"github.com/rocketraft/rocketraft/message"
)

// uniqIDs makes this process's message ids: its first non-loopback IPv4 address, its pid and 4 random
// bytes (message.UniqIDGenerator).
var uniqIDs = func() *message.UniqIDGenerator {
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	ip, _ := netip.AddrFromSlice(localIPv4())
	return message.NewUniqIDGenerator(ip, salt)
}()

// NewUniqID is a message unique id (UNIQ_KEY, the msgId of a SendResult): 32 upper-case hex digits in
// RocketMQ's MessageClientIDSetter layout. Safe for concurrent use.
func NewUniqID() string { return uniqIDs.Next() }

func localIPv4() net.IP {
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				return n.IP.To4()
			}
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}
