package broker

import (
	"context"
	"strings"

	"github.com/rocketraft/rocketraft/remoting"
)

// Consumer offsets on a slave. RocketMQ's slave overwrites its offsets with the master's every 10 s
// and has no way back, so offsets that clients committed to the slave while the master was away
// are lost when the master returns and consumers re-read from the master's stale offsets (issues
// #1094, #2513). Here the slave remembers what it last took from the master (slaveMeta.mu.synced); an
// entry that differs from it was committed to the slave since. When the master is back such an
// entry is pushed to it (UPDATE_CONSUMER_OFFSET, as a client would) if the master's own value is
// lower, and the slave keeps it instead of the master's lower one. A master that is ahead wins.
// At start the offsets loaded from disk count as taken from the master, so a restarted slave never
// pushes old values over a master that moved (an offset reset, say). The master's offsets records
// (ha_meta.go) go through the same merge, key by key: what they set counts as taken from the master.

// syncConsumerOffsets pulls the master's offsets, pushes back the slave's newer commits, and merges, unless
// an offsets record of the master was applied meanwhile (ha_meta_apply.go: it is as new as the copy).
func (s *classicSlave) syncConsumerOffsets(ctx context.Context, addr string) error {
	b := s.b
	m := s.meta
	gen := m.offsetsGeneration()
	var w ConsumerOffsetWrapper
	if err := s.fetchFromMaster(ctx, addr, remoting.GetAllConsumerOffset, &w); err != nil {
		return err
	}
	master := w.OffsetTable
	if master == nil {
		master = map[string]map[int32]int64{}
	}
	type commit struct {
		key string
		qid int32
		off int64
	}
	var ahead []commit
	local := b.offsets.snapshot().OffsetTable
	m.mu.Lock()
	for key, queues := range local {
		for qid, off := range queues {
			if synced, ok := m.mu.synced[key][qid]; ok && synced == off {
				continue // taken from the master, not committed here
			}
			if mo, ok := master[key][qid]; ok && mo >= off {
				continue
			}
			ahead = append(ahead, commit{key, qid, off})
		}
	}
	m.mu.Unlock()
	for _, c := range ahead {
		topic, group, found := strings.Cut(c.key, offsetKeySep)
		if !found {
			continue
		}
		req := remoting.NewRequest(remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": group, "topic": topic,
			"queueId": itoa(int64(c.qid)), "commitOffset": itoa(c.off)}, nil)
		if _, err := s.callMaster(ctx, addr, req); err != nil {
			b.log.Warn("could not push an offset committed to the slave back to the master", "group", group, "topic", topic,
				"queue", c.qid, "offset", c.off, "err", err)
			continue
		}
		b.log.Info("pushed an offset committed to the slave while the master was away back to the master", "group", group,
			"topic", topic, "queue", c.qid, "offset", c.off, "masterHad", master[c.key][c.qid])
		if master[c.key] == nil {
			master[c.key] = map[int32]int64{}
		}
		master[c.key][c.qid] = c.off
	}
	if !m.takeOffsetsCopy(gen, master) {
		return nil
	}
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
