package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPairOutsideEphemeralRange: the ports handed out are outside the kernel's ephemeral range, both
// ports of a pair can be listened on, and successive calls do not repeat a port.
func TestPairOutsideEphemeralRange(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		p, err := Pair()
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p+1 >= lo+size {
			t.Fatalf("port %d outside %d-%d", p, lo, lo+size-1)
		}
		if seen[p] || seen[p+1] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p], seen[p+1] = true, true
		for _, q := range []int{p, p + 1} {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q))
			if err != nil {
				t.Fatalf("port %d: %v", q, err)
			}
			l.Close()
		}
	}
}

// TestLeavesLocalClusterPorts: below an ephemeral range that leaves room (32768 up by default), the ports
// handed out end at 20000; scripts/deploy-local.sh's clusters take theirs from there up.
func TestLeavesLocalClusterPorts(t *testing.T) {
	first, n := portRange()
	if first == 10000 && first+n > localClusterPorts {
		t.Fatalf("ports %d-%d handed out: they reach the local clusters' (%d up: scripts/deploy-local.sh)",
			first, first+n-1, localClusterPorts)
	}
}

// TestSkipsBusyPort: a port held by a listener is never handed out.
func TestSkipsBusyPort(t *testing.T) {
	p, err := One()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mu.Lock()
	next = p - lo // the next candidate is the busy port
	mu.Unlock()
	q, err := One()
	if err != nil {
		t.Fatal(err)
	}
	if q == p {
		t.Fatalf("busy port %d handed out", p)
	}
}
