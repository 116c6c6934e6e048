package admin

import (
	"fmt"
	"strconv"
	"sync"
)

// versionNames is RocketMQ's MQVersion.Version enum by ordinal: the version numbers clients and brokers
// send (317 = V4_5_2, the official Go client's; 401 = V4_9_4). The enum is regular after its first sixteen
// names: a _SNAPSHOT and a release name per patch, for the patch ranges below, then HIGHER_VERSION.
var versionNames = sync.OnceValue(func() []string {
	names := []string{"V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1", "V3_0_0_BETA1", "V3_0_0_BETA2", "V3_0_0_BETA3",
		"V3_0_0_BETA4", "V3_0_0_BETA5", "V3_0_0_BETA6_SNAPSHOT", "V3_0_0_BETA6", "V3_0_0_BETA7_SNAPSHOT",
		"V3_0_0_BETA7", "V3_0_0_BETA8_SNAPSHOT", "V3_0_0_BETA8", "V3_0_0_BETA9_SNAPSHOT", "V3_0_0_BETA9",
		"V3_0_0_FINAL"}
	add := func(major, minor, from, to int) {
		for p := from; p <= to; p++ {
			v := fmt.Sprintf("V%d_%d_%d", major, minor, p)
			names = append(names, v+"_SNAPSHOT", v)
		}
	}
	add(3, 0, 1, 15)
	add(3, 1, 0, 9)
	add(3, 2, 0, 9)
	for minor := 3; minor <= 9; minor++ {
		add(3, minor, 1, 9)
	}
	for major := 4; major <= 5; major++ {
		for minor := 0; minor <= 9; minor++ {
			add(major, minor, 0, 9)
		}
	}
	return append(names, "HIGHER_VERSION")
})

// versionDesc is MQVersion.getVersionDesc: the enum name of a version number (the last name for larger ones).
func versionDesc(v int32) string {
	names := versionNames()
	switch {
	case v < 0:
		return strconv.Itoa(int(v))
	case int(v) >= len(names):
		return names[len(names)-1]
	}
	return names[v]
}
