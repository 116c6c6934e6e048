// Package freeport hands tests and local tools TCP ports to listen on later, chosen outside the
// kernel's ephemeral range.
//
// Asking the kernel for port 0 and closing the listener is racy in a way that shows under load: the
// port comes from the ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by default), and any
// outbound connection made before the server binds it (a client's dial to a name server, a Raft peer's
// heartbeat) can be given the same number as its local port; the server then fails with "address already
// in use". Ports below the ephemeral range are never given to outbound connections, so a port taken from
// there and found free stays free unless another process picks the same number: each process starts at a
// random place in the range and walks it, so two test binaries running at once rarely meet, and a port
// found busy is skipped. The ports from 20000 up to the ephemeral range are left to scripts/deploy-local.sh's
// clusters (localClusterPorts).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

var (
	mu   sync.Mutex
	lo   int // first port of the range handed out
	size int // ports in the range
	next int // offset in the range of the next candidate
)

// localClusterPorts is where the ports handed out end, when the ephemeral range leaves room above it: the
// ports from there up are scripts/deploy-local.sh's.
const localClusterPorts = 20000

// portRange is the span of ports handed out: below the ephemeral range when that leaves room (the
// usual case), above it otherwise.
func portRange() (int, int) {
	eLo, eHi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			a, errA := strconv.Atoi(f[0])
			z, errZ := strconv.Atoi(f[1])
			if errA == nil && errZ == nil && a <= z {
				eLo, eHi = a, z
			}
		}
	}
	if eLo >= localClusterPorts+2000 {
		// 10000 up to 20000: the ports from 20000 to the ephemeral range are left to the local clusters
		// of scripts/deploy-local.sh, which picks its 50 ports there when it starts and binds them over
		// minutes (a chaos run beside it took one of them, and a broker of the deploy could not start).
		return 10000, localClusterPorts - 10000
	}
	if eLo-10000 >= 2000 {
		return 10000, eLo - 10000
	}
	if 65535-eHi-1 >= 2000 {
		return eHi + 1, 65535 - eHi - 1
	}
	return 1024, eLo - 1024 // a nearly full ephemeral range: the best there is
}

// Pair returns a port p such that p and p+1 are both free on every host (IP addresses of this machine;
// 127.0.0.1 when none is given) at the time of the call: a broker listens on listenPort and its HA
// service on listenPort+1.
func Pair(hosts ...string) (int, error) { return find(2, hosts) }

// One returns a port free on every host (127.0.0.1 when none is given) at the time of the call.
func One(hosts ...string) (int, error) { return find(1, hosts) }

func find(width int, hosts []string) (int, error) {
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	mu.Lock()
	defer mu.Unlock()
	if size == 0 {
		lo, size = portRange()
		next = rand.IntN(size)
	}
	var lastErr error
	for range size / 2 {
		port := lo + next
		next = (next + width) % (size - width)
		if err := freeOn(port, width, hosts); err != nil {
			lastErr = err
			continue
		}
		return port, nil
	}
	return 0, fmt.Errorf("freeport: no %d consecutive ports free on %v in %d-%d (last: %v)", width, hosts, lo, lo+size-1, lastErr)
}

// freeOn listens on port..port+width-1 on every host, then closes them all.
func freeOn(port, width int, hosts []string) error {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for p := port; p < port+width; p++ {
		for _, h := range hosts {
			l, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(p)))
			if err != nil {
				return err
			}
			held = append(held, l)
		}
	}
	return nil
}
