//go:build !linux

package broker

import "errors"

// openVIPInterface: adding masterVipAddress to an interface is implemented for Linux only.
func openVIPInterface(name string) (vipInterface, error) {
	return nil, errors.New("masterVipInterface needs Linux (netlink); use a loopback masterVipAddress elsewhere")
}
