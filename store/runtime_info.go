package store

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// LockTimeMills is how long the CommitLog append in progress has held the write lock, in milliseconds; 0
// when no append holds it (RocketMQ's lockTimeMills, reported as pageCacheLockTimeMills). A figure that
// keeps growing means an append is stuck on the disk or a page fault.
func (s *Store) LockTimeMills() int64 {
	since := s.commitLog.lockedSince.Load()
	if since == 0 {
		return 0
	}
	return max(time.Duration(time.Now().UnixNano()-since).Milliseconds(), 0)
}

// DiskSpace is the size of a partition and its free bytes, as Java's File.getTotalSpace and getFreeSpace
// give them (free counts the blocks reserved for root), and its used ratio as RocketMQ computes it (root's
// blocks count neither as used nor as available).
type DiskSpace struct {
	Total, Free int64
	UsedRatio   float64
}

// CommitLogDisk is the space of the partition holding the CommitLog.
func (s *Store) CommitLogDisk() (DiskSpace, error) { return diskSpace(s.cfg.commitLogDir()) }

// ConsumeQueueDisk is the space of the partition holding the ConsumeQueues.
func (s *Store) ConsumeQueueDisk() (DiskSpace, error) { return diskSpace(s.cfg.consumeQueueDir()) }

func diskSpace(path string) (DiskSpace, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return DiskSpace{}, fmt.Errorf("store: statfs %s: %w", path, err)
	}
	bs := int64(st.Bsize)
	d := DiskSpace{Total: int64(st.Blocks) * bs, Free: int64(st.Bfree) * bs}
	used := st.Blocks - st.Bfree
	if entire := used + st.Bavail; entire > 0 {
		d.UsedRatio = float64(used) / float64(entire)
	}
	return d, nil
}

// RootDisk is the space of the partition holding storePathRootDir.
func (s *Store) RootDisk() (DiskSpace, error) { return diskSpace(s.cfg.StorePathRootDir) }
