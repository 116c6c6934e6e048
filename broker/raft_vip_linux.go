package broker

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// netlinkVIP is the vipInterface of a Linux network interface: the address as a /32 through netlink
// (vishvananda/netlink), the gratuitous ARP on an AF_PACKET socket (mdlayher/arp). The interface is looked
// up by name at every call, so a recreated interface is found again.
type netlinkVIP struct{ name string }

// openVIPInterface checks that the interface exists and that the process has CAP_NET_ADMIN (addresses)
// and CAP_NET_RAW (the ARP frame) in its effective set.
func openVIPInterface(name string) (vipInterface, error) {
	if _, err := netlink.LinkByName(name); err != nil {
		return nil, fmt.Errorf("no network interface %q: %w", name, err)
	}
	var missing []string
	for _, c := range []struct {
		cap  uint
		name string
	}{{unix.CAP_NET_ADMIN, "CAP_NET_ADMIN"}, {unix.CAP_NET_RAW, "CAP_NET_RAW"}} {
		ok, err := hasCapability(c.cap)
		if err != nil {
			return nil, fmt.Errorf("reading this process's capabilities: %w", err)
		}
		if !ok {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w (missing from the effective set: %v)", errVIPPermission, missing)
	}
	return netlinkVIP{name: name}, nil
}

// hasCapability reports whether capability c is in this thread's effective set (every thread of a Go
// process has the same sets unless it changes them, which this one does not).
func hasCapability(c uint) (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3 fills two: capabilities 0-31 and 32-63
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, err
	}
	return data[c/32].Effective&(1<<(c%32)) != 0, nil
}

func (l netlinkVIP) link() (netlink.Link, error) {
	link, err := netlink.LinkByName(l.name)
	if err != nil {
		return nil, fmt.Errorf("no network interface %q: %w", l.name, err)
	}
	return link, nil
}

func hostAddr(ip netip.Addr) *netlink.Addr {
	return &netlink.Addr{IPNet: &net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(ip.BitLen(), ip.BitLen())}}
}

// permission maps EPERM and EACCES to errVIPPermission.
func permission(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
		return fmt.Errorf("%w: %w", errVIPPermission, err)
	}
	return err
}

func (l netlinkVIP) Add(ip netip.Addr) error {
	link, err := l.link()
	if err != nil {
		return err
	}
	if err := netlink.AddrReplace(link, hostAddr(ip)); err != nil { // replace: no error when it is there
		return fmt.Errorf("add %s/32 to %s: %w", ip, l.name, permission(err))
	}
	return nil
}

func (l netlinkVIP) Remove(ip netip.Addr) (bool, error) {
	link, err := l.link()
	if err != nil {
		return false, err
	}
	if err := netlink.AddrDel(link, hostAddr(ip)); err != nil {
		if errors.Is(err, unix.EADDRNOTAVAIL) {
			return false, nil
		}
		return false, fmt.Errorf("remove %s/32 from %s: %w", ip, l.name, permission(err))
	}
	return true, nil
}

// Announce broadcasts an ARP request for ip from ip (an ARP announcement, RFC 5227: sender and target
// address ip, target hardware address zero), which updates the peers' and switches' caches.
func (l netlinkVIP) Announce(ip netip.Addr) error {
	ifi, err := net.InterfaceByName(l.name)
	if err != nil {
		return fmt.Errorf("no network interface %q: %w", l.name, err)
	}
	c, err := arp.Dial(ifi)
	if err != nil {
		return fmt.Errorf("ARP socket on %s: %w", l.name, permission(err))
	}
	defer c.Close()
	p, err := arp.NewPacket(arp.OperationRequest, ifi.HardwareAddr, ip, make(net.HardwareAddr, len(ifi.HardwareAddr)), ip)
	if err != nil {
		return err
	}
	broadcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if err := c.WriteTo(p, broadcast); err != nil {
		return fmt.Errorf("gratuitous ARP on %s: %w", l.name, permission(err))
	}
	return nil
}
