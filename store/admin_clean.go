package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// The store's side of mqadmin deleteExpiredCommitLog, cleanExpiredCQ and cleanUnusedTopic, and of queryCq.

// DeleteExpiredFilesNow is RocketMQ's executeDeleteFilesManually (DELETE_EXPIRED_COMMITLOG): it deletes the
// expired CommitLog files now, whatever the deleteWhen hour, under the clean service's rules (older than
// fileReservedTime, flushed and dispatched, the retention guard's say, never the last file), then the
// ConsumeQueue and index files that point only below the new minimum. It returns how many CommitLog files
// went.
func (s *Store) DeleteExpiredFilesNow(ctx context.Context) int {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	n := s.deleteExpiredCommitLog(ctx, s.clock.Now(), false)
	s.cleanLogics(ctx, 0)
	return n
}

// CleanExpiredConsumeQueues is RocketMQ's cleanExpiredConsumerQueue (CLEAN_EXPIRED_CONSUMEQUEUE): every
// ConsumeQueue whose records are all gone from the CommitLog (its last unit ends at or below the CommitLog
// minimum) is destroyed with its folder, and a topic folder left empty goes too. Unlike RocketMQ, the queue
// keeps its next queue offset: a later message continues the numbering in a new ConsumeQueue file, so no
// consumer offset goes backwards. It returns the queues destroyed, as "topic/queueId", sorted.
func (s *Store) CleanExpiredConsumeQueues() ([]string, error) {
	minPhy := s.commitLog.q.minOffset()
	if minPhy <= 0 {
		return nil, nil
	}
	s.cqRemove.Lock()
	defer s.cqRemove.Unlock()
	var (
		gone []string
		errs []error
	)
	topics := map[string]bool{}
	for _, cq := range s.cqs.all() {
		end := cq.lastPhysicEnd()
		if end < 0 || end > minPhy {
			continue
		}
		s.cqs.mu.Lock()
		delete(s.cqs.queues, queueKey{cq.topic, cq.queueID})
		s.cqs.mu.Unlock()
		if err := cq.destroy(); err != nil {
			errs = append(errs, err)
		}
		gone = append(gone, fmt.Sprintf("%s/%d", cq.topic, cq.queueID))
		topics[cq.topic] = true
	}
	for t := range topics {
		dir := filepath.Join(s.cfg.consumeQueueDir(), t)
		if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
			if err := os.Remove(dir); err != nil {
				errs = append(errs, fmt.Errorf("store: remove %s: %w", dir, err))
			}
		}
	}
	sort.Strings(gone)
	if len(gone) > 0 {
		s.log.Info("expired consume queues destroyed", "queues", gone, "commitLogMinOffset", minPhy)
	}
	return gone, errors.Join(errs...)
}

// ConsumeQueueTopics lists, sorted, the topics that have a ConsumeQueue here.
func (s *Store) ConsumeQueueTopics() []string {
	seen := map[string]bool{}
	for _, cq := range s.cqs.all() {
		seen[cq.topic] = true
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// CleanPolicy are the store keys the clean service reads on each run, which may change while the store runs.
type CleanPolicy struct {
	FileReservedTime      int    // hours a CommitLog file is kept (fileReservedTime)
	DeleteWhen            string // the hours expired files go ("04;05", deleteWhen)
	DiskMaxUsedSpaceRatio int    // percent of disk use past which files go at once (diskMaxUsedSpaceRatio)
}

// SetCleanPolicy changes the clean service's keys from its next run on. The values must be valid
// (Config.Validate's rules); an invalid one is an error naming its key and nothing changes.
func (s *Store) SetCleanPolicy(p CleanPolicy) error {
	next := s.cfg // s.cfg itself never changes after Open
	next.FileReservedTime, next.DeleteWhen, next.DiskMaxUsedSpaceRatio = p.FileReservedTime, p.DeleteWhen, p.DiskMaxUsedSpaceRatio
	if err := next.Validate(); err != nil {
		return err
	}
	s.cleanPolicy.Store(&p)
	return nil
}

// policy is the clean service's keys in force: SetCleanPolicy's, else the config's.
func (s *Store) policy() CleanPolicy {
	if p := s.cleanPolicy.Load(); p != nil {
		return *p
	}
	return CleanPolicy{FileReservedTime: s.cfg.FileReservedTime, DeleteWhen: s.cfg.DeleteWhen,
		DiskMaxUsedSpaceRatio: s.cfg.DiskMaxUsedSpaceRatio}
}
