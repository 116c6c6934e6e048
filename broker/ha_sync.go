package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Slave metadata sync (RocketMQ's SlaveSynchronize): a slave pulls topics, consumer offsets, delay
// offsets and subscription groups from its master's remoting port every slaveSynchronizeInterval (10 s),
// and at once when it learns the master's address. Topics and subscription groups are replaced when the
// master's DataVersion differs; delay offsets are taken as they are; consumer offsets are merged
// (ha_offsets.go). This copy is the baseline of a slave that starts and the whole story with a master
// that writes no metadata records; a master of this broker also writes every change into its CommitLog
// (ha_meta.go), which the slave applies as it dispatches it (ha_meta_apply.go), and a copy older than a
// record applied is skipped.

// syncCallTimeout bounds one request to the master (RocketMQ's BrokerOuterAPI uses 3 s).
const syncCallTimeout = 3 * time.Second

// syncLoop runs the sync until the broker stops.
func (s *classicSlave) syncLoop() {
	b := s.b
	defer b.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.wg.Add(1)
	go func() { // a sync in flight ends with the broker
		defer b.wg.Done()
		select {
		case <-b.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	t := time.NewTicker(ms(b.cfg.Replication.SlaveSynchronizeInterval))
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-s.syncWake:
		}
		s.syncFromMaster(ctx)
	}
}

// syncFromMaster is one round: the four tables, each on its own (one failing does not stop the rest).
func (s *classicSlave) syncFromMaster(ctx context.Context) {
	b := s.b
	addr := b.masterAddress()
	if addr == "" || addr == b.addr {
		return
	}
	steps := []struct {
		what string
		fn   func(context.Context, string) error
	}{
		{"topics", s.syncTopics},
		{"consumer offsets", s.syncConsumerOffsets},
		{"delay offsets", s.syncDelayOffsets},
		{"subscription groups", s.syncSubscriptionGroups},
	}
	for _, step := range steps {
		if err := step.fn(ctx, addr); err != nil && ctx.Err() == nil {
			b.log.Warn("slave sync from the master failed", "what", step.what, "master", addr, "err", err)
		}
	}
}

// masterAddress is the master's remoting address the name servers answered ("" while unknown).
func (b *Broker) masterAddress() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.masterAddr
}

// callMaster sends req to the master and checks the answer's code.
func (s *classicSlave) callMaster(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, syncCallTimeout)
	defer cancel()
	resp, err := s.remote.Invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != int32(remoting.Success) {
		return nil, &remoteError{code: resp.Code, remark: resp.Remark}
	}
	return resp, nil
}

// fetchFromMaster sends a body-less request and decodes the JSON answer into v.
func (s *classicSlave) fetchFromMaster(ctx context.Context, addr string, code remoting.RequestCode, v any) error {
	resp, err := s.callMaster(ctx, addr, remoting.NewRequest(code, nil, nil))
	if err != nil {
		return err
	}
	if err := protocol.UnmarshalBareIntKeys(resp.Body, v); err != nil {
		return fmt.Errorf("decode %s answer: %w", code, err)
	}
	return nil
}

func (s *classicSlave) syncTopics(ctx context.Context, addr string) error {
	b := s.b
	var w protocol.TopicConfigSerializeWrapper
	if err := s.fetchFromMaster(ctx, addr, remoting.GetAllTopicConfig, &w); err != nil {
		return err
	}
	for name, tc := range w.TopicConfigTable {
		if tc != nil && tc.Attributes == nil {
			tc.Attributes = map[string]string{}
		}
		if tc != nil && tc.TopicName == "" {
			tc.TopicName = name
		}
	}
	if !s.meta.takeTopicCopy(w) {
		return nil
	}
	b.log.Info("topics updated from the master", "master", addr, "topics", len(w.TopicConfigTable))
	return b.topics.changed()
}

func (s *classicSlave) syncSubscriptionGroups(ctx context.Context, addr string) error {
	b := s.b
	var w SubscriptionGroupWrapper
	if err := s.fetchFromMaster(ctx, addr, remoting.GetAllSubscriptionGroupConfig, &w); err != nil {
		return err
	}
	if !s.meta.takeGroupCopy(w) {
		return nil
	}
	b.log.Info("subscription groups updated from the master", "master", addr, "groups", len(w.SubscriptionGroupTable))
	return b.groups.persist()
}

func (s *classicSlave) syncDelayOffsets(ctx context.Context, addr string) error {
	b := s.b
	gen := s.meta.offsetsGeneration()
	var w protocol.DelayOffsetWrapper
	if err := s.fetchFromMaster(ctx, addr, remoting.GetAllDelayOffset, &w); err != nil {
		return err
	}
	if !s.meta.takeDelayCopy(gen, w.OffsetTable) {
		return nil
	}
	return b.schedule.Persist()
}

// replaceFrom replaces the table with values (nil ones skipped) and takes version, unless version
// is the table's already (RocketMQ's slave sync of topics and subscription groups). It reports
// whether it replaced anything.
func (t *versionedTable[T]) replaceFrom(values map[string]*T, version protocol.DataVersion) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if version == t.version {
		return false
	}
	t.dropped = true
	table := make(map[string]*T, len(values))
	for k, v := range values {
		if v != nil {
			c := *v
			table[k] = &c
		}
	}
	t.table = table
	t.version = version
	return true
}
