package acl

import (
	"fmt"
	"strings"
)

// Perm is a permission on a topic or a consumer group: RocketMQ's Permission bits. DENY wins over anything
// else it is combined with.
type Perm uint8

// The permission bits (RocketMQ's Permission.DENY, PUB, SUB).
const (
	Deny Perm = 1 << 0
	Pub  Perm = 1 << 2
	Sub  Perm = 1 << 3
)

// ParsePerm reads a permission as plain_acl.yml writes it: DENY, PUB, SUB, PUB|SUB or SUB|PUB (spaces around
// the names are ignored). An empty string is DENY, RocketMQ's default for a missing defaultTopicPerm or
// defaultGroupPerm. RocketMQ turns any other word into DENY silently; here it is an error, so that a typo does
// not lock an account out unnoticed.
func ParsePerm(s string) (Perm, error) {
	var p Perm
	words := strings.Split(s, "|")
	for _, w := range words {
		switch strings.TrimSpace(w) {
		case "PUB":
			p |= Pub
		case "SUB":
			p |= Sub
		case "DENY":
			if len(words) > 1 {
				return 0, fmt.Errorf("permission %q: DENY stands alone", s)
			}
			p |= Deny
		case "":
			if len(words) > 1 {
				return 0, fmt.Errorf("permission %q has an empty part", s)
			}
			p |= Deny
		default:
			return 0, fmt.Errorf("permission %q is not DENY, PUB, SUB or PUB|SUB", s)
		}
	}
	return p, nil
}

// Allows reports whether an account holding p may do what needs want (PUB or SUB): never with DENY, else
// when p has one of want's bits (RocketMQ's Permission.checkPermission).
func (p Perm) Allows(want Perm) bool {
	return p&Deny == 0 && p&want != 0
}

// String writes p as plain_acl.yml does.
func (p Perm) String() string {
	switch {
	case p&Deny != 0:
		return "DENY"
	case p&(Pub|Sub) == Pub|Sub:
		return "PUB|SUB"
	case p&Pub != 0:
		return "PUB"
	case p&Sub != 0:
		return "SUB"
	}
	return "DENY"
}
