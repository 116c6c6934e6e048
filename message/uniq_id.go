package message

import (
	"encoding/binary"
	"net/netip"
	"os"
	"sync/atomic"
	"time"
)

// UniqIDGenerator makes message unique ids (the UNIQ_KEY property, a SendResult's msgId) in the
// layout of RocketMQ's MessageClientIDSetter, 16 bytes as 32 upper-case hex digits:
//
//	+--------+------+--------+------------------------------+---------+
//	| IPv4 4 | pid 2| salt 4 | ms since the month began  4  | count 2 |
//	+--------+------+--------+------------------------------+---------+
//
// The salt is RocketMQ's class-loader hash: a producer sets random bytes there, a broker zeros.
// Safe for concurrent use.
type UniqIDGenerator struct {
	prefix [10]byte
	seq    atomic.Uint32
}

// NewUniqIDGenerator returns a generator for this process on ip (zeros when it is not IPv4).
func NewUniqIDGenerator(ip netip.Addr, salt [4]byte) *UniqIDGenerator {
	g := &UniqIDGenerator{}
	if ip.Is4() {
		a := ip.As4()
		copy(g.prefix[:4], a[:])
	}
	binary.BigEndian.PutUint16(g.prefix[4:], uint16(os.Getpid()))
	copy(g.prefix[6:], salt[:])
	return g
}

// Next is a new id, stamped with the local time.
func (g *UniqIDGenerator) Next() string {
	now := time.Now()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
	var b [16]byte
	copy(b[:], g.prefix[:])
	binary.BigEndian.PutUint32(b[10:], uint32(now.Sub(month).Milliseconds()))
	binary.BigEndian.PutUint16(b[14:], uint16(g.seq.Add(1)))
	const hexUpper = "0123456789ABCDEF"
	var out [32]byte
	for i, v := range b {
		out[2*i], out[2*i+1] = hexUpper[v>>4], hexUpper[v&0x0f]
	}
	return string(out[:])
}
