package broker

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// uniqIDGenerator makes UNIQ_KEY values for messages whose producer set none, in the layout of RocketMQ's
// MessageClientIDSetter: IPv4(4) | pid(2) | 0(4) | ms since the start of the month(4) | counter(2), hex.
type uniqIDGenerator struct {
	prefix string // hex of ip, pid and the zero class-loader hash
	mu     sync.Mutex
	month  time.Time // guarded by mu: start of the current month
	next16 uint16    // guarded by mu
}

func newUniqIDGenerator(ip netip.Addr) *uniqIDGenerator {
	var p [10]byte
	if ip.Is4() {
		a := ip.As4()
		copy(p[:4], a[:])
	}
	binary.BigEndian.PutUint16(p[4:], uint16(os.Getpid()))
	return &uniqIDGenerator{prefix: strings.ToUpper(hex.EncodeToString(p[:]))}
}

func (g *uniqIDGenerator) next() string {
	now := time.Now()
	g.mu.Lock()
	if g.month.IsZero() || now.Month() != g.month.Month() || now.Year() != g.month.Year() {
		g.month = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, now.Location())
	}
	since := uint32(now.Sub(g.month).Milliseconds())
	g.next16++
	n := g.next16
	g.mu.Unlock()
	var t [6]byte
	binary.BigEndian.PutUint32(t[:4], since)
	binary.BigEndian.PutUint16(t[4:], n)
	return g.prefix + strings.ToUpper(hex.EncodeToString(t[:]))
}
