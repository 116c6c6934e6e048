package message

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"testing"
	"time"
)

// TestUniqIDLayout: ip, pid and salt lead the id, then the milliseconds since the month began and
// a counter that moves by one per id.
func TestUniqIDLayout(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.1.2.3"), [4]byte{0xde, 0xad, 0xbe, 0xef})
	before := time.Now()
	a, b := g.Next(), g.Next()
	for _, id := range []string{a, b} {
		raw, err := hex.DecodeString(id)
		if err != nil || len(raw) != 16 || hex.EncodeToString(raw) == id {
			t.Fatalf("id %q: want 32 upper-case hex digits (%v)", id, err)
		}
		if got := netip.AddrFrom4([4]byte(raw[:4])); got.String() != "10.1.2.3" {
			t.Errorf("ip %v", got)
		}
		if pid := binary.BigEndian.Uint16(raw[4:]); pid != uint16(os.Getpid()) {
			t.Errorf("pid %d, want %d", pid, uint16(os.Getpid()))
		}
		if hex.EncodeToString(raw[6:10]) != "deadbeef" {
			t.Errorf("salt %x", raw[6:10])
		}
		month := time.Date(before.Year(), before.Month(), 1, 0, 0, 0, 0, before.Location())
		if ms := binary.BigEndian.Uint32(raw[10:]); int64(ms) < before.Sub(month).Milliseconds()-1000 ||
			int64(ms) > time.Since(month).Milliseconds()+1000 {
			t.Errorf("ms since the month began %d", ms)
		}
	}
	ra, _ := hex.DecodeString(a)
	rb, _ := hex.DecodeString(b)
	if binary.BigEndian.Uint16(rb[14:]) != binary.BigEndian.Uint16(ra[14:])+1 {
		t.Errorf("counters %x then %x", ra[14:], rb[14:])
	}
}
