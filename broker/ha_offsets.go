package broker

import (
	"context"
	"strings"

	"github.com/rocketraft/rocketraft/remoting"
)

// Consumer offsets on a slave. RocketMQ's slave overwrites its offsets with the master's every 10 s
// and has no way back, so offsets that clients committed to the slave while the master was away
// are lost when the master returns and consumers re-read from the master's stale offsets (issues
// #1094, #2513). Here the slave remembers what it last took from the master (classicSlave.synced); an
// entry that differs from it was committed to the slave since. When the master is back such an
// entry is pushed to it (UPDATE_CONSUMER_OFFSET, as a client would) if the master's own value is
// lower, and the slave keeps it instead of the master's lower one. A master that is ahead wins.
// At start the offsets loaded from disk count as taken from the master, so a restarted slave never
// pushes old values over a master that moved (an offset reset, say).

// syncConsumerOffsets pulls the master's offsets, pushes back the slave's newer commits, and merges.
func (s *classicSlave) syncConsumerOffsets(ctx context.Context, addr string) error {
	b := s.b
	var w ConsumerOffsetWrapper
	if err := s.fetchFromMaster(ctx, addr, remoting.GetAllConsumerOffset, &w); err != nil {
		return err
	}
	master := w.OffsetTable
	if master == nil {
		master = map[string]map[int32]int64{}
	}
	for key, queues := range b.offsets.snapshot().OffsetTable {
		for qid, off := range queues {
			if synced, ok := s.synced[key][qid]; ok && synced == off {
				continue // taken from the master, not committed here
			}
			if mo, ok := master[key][qid]; ok && mo >= off {
				continue
			}
			topic, group, found := strings.Cut(key, offsetKeySep)
			if !found {
				continue
			}
			req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
				"queueId": itoa(int64(qid)), "commitOffset": itoa(off)}, nil)
			if _, err := s.callMaster(ctx, addr, req); err != nil {
				b.log.Warn("could not push an offset committed to the slave back to the master", "group", group, "topic", topic,
					"queue", qid, "offset", off, "err", err)
				continue
			}
			b.log.Info("pushed an offset committed to the slave while the master was away back to the master", "group", group,
				"topic", topic, "queue", qid, "offset", off, "masterHad", master[key][qid])
			if master[key] == nil {
				master[key] = map[int32]int64{}
			}
			master[key][qid] = off
		}
	}
	s.synced = b.offsets.mergeFromMaster(master, s.synced)
	return b.offsets.persist(false)
}

// mergeFromMaster takes the master's offsets (RocketMQ's putAll: entries the master lacks stay), but
// keeps an entry committed here since the last sync (it differs from synced) that is ahead of the
// master's. It returns the new synced table: synced, updated with the master's values as taken.
func (m *consumerOffsetManager) mergeFromMaster(master, synced map[string]map[int32]int64) map[string]map[int32]int64 {
	next := make(map[string]map[int32]int64, len(synced)+len(master))
	for key, queues := range synced {
		c := make(map[int32]int64, len(queues))
		for qid, off := range queues {
			c[qid] = off
		}
		next[key] = c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, queues := range master {
		local := m.queuesLocked(key)
		taken := next[key]
		if taken == nil {
			taken = make(map[int32]int64, len(queues))
			next[key] = taken
		}
		for qid, mo := range queues {
			taken[qid] = mo
			cur, ok := local[qid]
			if ok && cur > mo {
				if s, wasSynced := synced[key][qid]; !wasSynced || s != cur {
					continue // committed here and ahead of the master: keep it, push it next round
				}
			}
			if !ok || cur != mo {
				local[qid] = mo
				m.dirty = true
			}
		}
	}
	return next
}
