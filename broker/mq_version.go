package broker

import "fmt"

// mqVersionDesc is RocketMQ's MQVersion.getVersionDesc(v) lower-cased, the version label of the connection
// gauges: the client's version ordinal named as "v4_9_4". The ordinals from 16 on come in pairs, a snapshot
// then its release, for the versions 3.0.1 .. 3.0.15, 3.1.0 .. 3.2.9, 3.3.1 .. 3.9.9 (each minor from .1),
// then 4.0.0 .. 5.9.9; past the last one RocketMQ says "higher_version". The 3.0.0 pre-releases below 16 are
// named by their number.
func mqVersionDesc(v int32) string {
	if v < 16 {
		return fmt.Sprintf("%d", v)
	}
	i := int(v-16) / 2 // the release's index in the sequence
	snapshot := (v-16)%2 == 0
	name := ""
	for _, seg := range mqVersionSegments {
		n := seg.patchTo - seg.patchFrom + 1
		if i < n {
			name = fmt.Sprintf("v%d_%d_%d", seg.major, seg.minor, seg.patchFrom+i)
			break
		}
		i -= n
	}
	if name == "" {
		return "higher_version"
	}
	if snapshot {
		name += "_snapshot"
	}
	return name
}

// mqVersionSegments are the runs of release versions in RocketMQ's MQVersion, in order.
var mqVersionSegments = func() []struct{ major, minor, patchFrom, patchTo int } {
	segs := []struct{ major, minor, patchFrom, patchTo int }{{3, 0, 1, 15}, {3, 1, 0, 9}, {3, 2, 0, 9}}
	for minor := 3; minor <= 9; minor++ {
		segs = append(segs, struct{ major, minor, patchFrom, patchTo int }{3, minor, 1, 9})
	}
	for major := 4; major <= 5; major++ {
		for minor := 0; minor <= 9; minor++ {
			segs = append(segs, struct{ major, minor, patchFrom, patchTo int }{major, minor, 0, 9})
		}
	}
	return segs
}()
