package store

import (
	"context"
	"os"
	"time"
)

// runClean is RocketMQ's CleanCommitLogService and CleanConsumeQueueService, every
// cleanResourceInterval.
func (s *Store) runClean(ctx context.Context) {
	t := time.NewTicker(time.Duration(s.cfg.CleanResourceInterval) * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.cleanOnce(ctx)
	}
}

// cleanOnce deletes expired CommitLog files (at a deleteWhen hour, or at once when the disk
// passes diskMaxUsedSpaceRatio; regardless of age past diskSpaceCleanForciblyRatio), then the
// ConsumeQueue and index files that only point below the new CommitLog minimum.
func (s *Store) cleanOnce(ctx context.Context) {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	now := s.clock.Now()
	spaceToDelete, cleanImmediately := s.checkDisk()
	if s.isTimeToDelete(now) || spaceToDelete {
		atOnce := cleanImmediately && s.cfg.CleanFileForciblyEnable
		n := s.deleteExpiredCommitLog(ctx, now, atOnce)
		if n == 0 && spaceToDelete {
			s.log.Warn("disk space is short but no commitlog file could be deleted", "diskUsedRatio", s.stats.diskRatio())
		}
	}
	if !s.cleanLogics(ctx, s.cfg.DeleteConsumeQueueFilesInterval) {
		return
	}
	hangAfter := time.Duration(s.cfg.DestroyMapedFileIntervalForcibly) * time.Millisecond
	for _, path := range s.commitLog.q.hangingFiles(hangAfter) {
		s.log.Warn("a deleted commitlog file is still held by readers; it is unmapped at their last release", "file", path)
	}
}

// cleanLogics deletes the ConsumeQueue and index files that only point below the CommitLog
// minimum, pausing pauseMs between two ConsumeQueue deletions; false when ctx ended.
func (s *Store) cleanLogics(ctx context.Context, pauseMs int64) bool {
	minPhy := s.commitLog.q.minOffset()
	if minPhy <= 0 {
		return true
	}
	pause := pauseFunc(ctx, pauseMs)
	for _, cq := range s.cqs.all() {
		if cq.deleteExpired(minPhy, pause) > 0 && ctx.Err() != nil {
			return false
		}
	}
	if s.index != nil {
		s.index.deleteExpired(minPhy)
	}
	return true
}

// checkDisk measures disk use, marks the disk full past diskSpaceWarningLevelRatio (writes
// are refused) or clears that mark, and says whether space must be reclaimed and whether
// files may go before they expire.
func (s *Store) checkDisk() (spaceToDelete, cleanImmediately bool) {
	ratio := -1.0
	for _, dir := range []string{s.cfg.commitLogDir(), s.cfg.StorePathRootDir} {
		r, err := s.diskUsage(dir)
		if err != nil {
			s.log.Warn("cannot measure disk use", "dir", dir, "err", err)
			continue
		}
		ratio = max(ratio, r)
	}
	if ratio < 0 {
		return false, false
	}
	s.stats.setDiskRatio(ratio)
	switch {
	case ratio > s.cfg.diskWarningRatio():
		if !s.diskFull.Swap(true) {
			s.log.Error("disk nearly full, refusing writes", "diskUsedRatio", ratio, "diskSpaceWarningLevelRatio", s.cfg.diskWarningRatio())
		}
		return true, true
	case ratio > s.cfg.diskForciblyRatio():
		return true, true
	}
	if s.diskFull.Swap(false) {
		s.log.Info("disk space is fine again, accepting writes", "diskUsedRatio", ratio)
	}
	return ratio > float64(s.policy().DiskMaxUsedSpaceRatio)/100, false
}

// isTimeToDelete reports whether now falls in one of the deleteWhen hours.
func (s *Store) isTimeToDelete(now time.Time) bool {
	hours, _ := parseDeleteWhen(s.policy().DeleteWhen)
	for _, h := range hours {
		if now.Hour() == h {
			return true
		}
	}
	return false
}

// deleteExpiredCommitLog deletes, oldest first and never the last file, the CommitLog files
// last modified more than fileReservedTime ago (any file with atOnce), up to
// deleteFileBatchMax, pausing deleteCommitLogFilesInterval between two. Files not yet flushed
// or dispatched are kept, and in framed mode those the retention guard keeps.
func (s *Store) deleteExpiredCommitLog(ctx context.Context, now time.Time, atOnce bool) int {
	q := s.commitLog.q
	limit := min(s.reput.from.Load(), q.flushedWhere.Load())
	reserved := time.Duration(s.policy().FileReservedTime) * time.Hour
	return q.deleteFirst(func(f *mappedFile) bool {
		if f.from+f.size > limit || !s.retentionAllows(f.from, f.from+f.size) {
			return false
		}
		if atOnce {
			return true
		}
		st, err := os.Stat(f.path)
		return err == nil && !now.Before(st.ModTime().Add(reserved))
	}, s.cfg.DeleteFileBatchMax, pauseFunc(ctx, s.cfg.DeleteCommitLogFilesInterval))
}

// pauseFunc waits ms between two deletions; false when ctx ended.
func pauseFunc(ctx context.Context, ms int64) func() bool {
	return func() bool {
		if ms <= 0 {
			return ctx.Err() == nil
		}
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
}
