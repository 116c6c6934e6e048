package acl

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// addrPattern is a whiteRemoteAddress or one entry of globalWhiteRemoteAddresses, in RocketMQ's forms
// (RemoteAddressStrategyFactory):
//
//	""                        matches nothing
//	*  *.*.*.*  *:*:*:*:*:*:*:*   matches every address
//	192.168.1.10              one address (IPv6 too, in any spelling)
//	192.168.1.10,192.168.1.11 a list of addresses
//	192.168.1.{10,11,12}      a list sharing a prefix (IPv6: 1050::5:{600,601})
//	192.168.1.*  192.168.*.*  192.168.1.10-20  10.0-3.*.*
//	                          per part: a number, * (any) or a range a-b; IPv6 groups likewise, in hex
//
// RocketMQ checks only the first part that is a range or *; here every part is checked, so "10.1-3.7.*"
// means what it says.
type addrPattern struct {
	text  string
	any   bool
	addrs []netip.Addr // exact addresses (unmapped)
	parts []rangePart  // per IPv4 octet or IPv6 group; nil unless a range pattern
	v6    bool         // parts are IPv6 groups
}

type rangePart struct{ lo, hi uint16 }

// parseAddrPattern reads one pattern; the error quotes it.
func parseAddrPattern(s string) (*addrPattern, error) {
	s = strings.TrimSpace(s)
	p := &addrPattern{text: s}
	switch {
	case s == "":
		return p, nil
	case s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*":
		p.any = true
		return p, nil
	case strings.HasSuffix(s, "}"):
		open := strings.LastIndexByte(s, '{')
		if open < 0 {
			return nil, fmt.Errorf("address pattern %q: '}' without '{'", s)
		}
		for _, suffix := range strings.Split(s[open+1:len(s)-1], ",") {
			if err := p.addExact(s[:open]+strings.TrimSpace(suffix), s); err != nil {
				return nil, err
			}
		}
		return p, nil
	case strings.Contains(s, ","):
		for _, a := range strings.Split(s, ",") {
			if err := p.addExact(strings.TrimSpace(a), s); err != nil {
				return nil, err
			}
		}
		return p, nil
	case strings.ContainsAny(s, "*-"):
		return p, p.parseRanges(s)
	}
	return p, p.addExact(s, s)
}

func (p *addrPattern) addExact(a, pattern string) error {
	ip, err := netip.ParseAddr(a)
	if err != nil {
		return fmt.Errorf("address pattern %q: %q is not an IP address", pattern, a)
	}
	p.addrs = append(p.addrs, ip.Unmap())
	return nil
}

// parseRanges reads a pattern with * or a-b parts: four decimal octets, or eight hex groups where "::" stands
// for the zero groups left out.
func (p *addrPattern) parseRanges(s string) error {
	bad := func(why string) error { return fmt.Errorf("address pattern %q: %s", s, why) }
	var fields []string
	base, maxv := 10, uint64(255)
	if strings.Contains(s, ":") {
		p.v6, base, maxv = true, 16, 0xffff
		head, tail, double := strings.Cut(s, "::")
		fields = splitNonEmpty(head, ":")
		if double {
			rest := splitNonEmpty(tail, ":")
			if len(fields)+len(rest) >= 8 {
				return bad("'::' stands for no group")
			}
			for len(fields)+len(rest) < 8 {
				fields = append(fields, "0")
			}
			fields = append(fields, rest...)
		}
		if len(fields) != 8 {
			return bad("an IPv6 pattern has 8 groups")
		}
	} else {
		fields = strings.Split(s, ".")
		if len(fields) != 4 {
			return bad("an IPv4 pattern has 4 parts")
		}
	}
	num := func(x string) (uint16, error) {
		n, err := strconv.ParseUint(strings.TrimSpace(x), base, 16)
		if err != nil || n > maxv {
			return 0, bad(fmt.Sprintf("%q is not a number from 0 to %d", x, maxv))
		}
		return uint16(n), nil
	}
	for _, f := range fields {
		f = strings.TrimSpace(f)
		if f == "*" {
			p.parts = append(p.parts, rangePart{0, uint16(maxv)})
			continue
		}
		loText, hiText, isRange := strings.Cut(f, "-")
		lo, err := num(loText)
		if err != nil {
			return err
		}
		hi := lo
		if isRange {
			if hi, err = num(hiText); err != nil {
				return err
			}
			if lo > hi {
				return bad(fmt.Sprintf("range %q runs backwards", f))
			}
		}
		p.parts = append(p.parts, rangePart{lo, hi})
	}
	return nil
}

func splitNonEmpty(s, sep string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, sep)
}

// match reports whether ip (unmapped) fits the pattern. A nil pattern matches nothing.
func (p *addrPattern) match(ip netip.Addr) bool {
	if p == nil || !ip.IsValid() {
		return false
	}
	if p.any {
		return true
	}
	for _, a := range p.addrs {
		if a == ip {
			return true
		}
	}
	if p.parts == nil || p.v6 != ip.Is6() {
		return false
	}
	b := ip.As16()
	for i, r := range p.parts {
		var v uint16
		if p.v6 {
			v = uint16(b[2*i])<<8 | uint16(b[2*i+1])
		} else {
			v = uint16(b[12+i])
		}
		if v < r.lo || v > r.hi {
			return false
		}
	}
	return true
}

// remoteIP reads the ip of an "ip:port" remote address (IPv6 in brackets); the zero Addr when it does not parse.
func remoteIP(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap()
	}
	if ip, err := netip.ParseAddr(remote); err == nil {
		return ip.Unmap()
	}
	return netip.Addr{}
}
