package pop

import "time"

// maxReadBytes bounds the bytes of one read of a queue (the broker's pull bound).
const maxReadBytes = 4 << 20

// GroupQueue names a group's queue.
type GroupQueue struct {
	Group, Topic string
	QueueID      int32
}

// ms is a duration of v milliseconds.
func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
