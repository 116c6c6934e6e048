package broker

import (
	"fmt"
	"testing"

	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// TestReplicationRoleByConfig: the config picks the role, and each role decides what its mode decides
// about the store (the SYNC_MASTER hook, the Raft framing), writes and the id and role it reports.
func TestReplicationRoleByConfig(t *testing.T) {
	for _, c := range []struct {
		name               string
		edit               func(*Config)
		wantType           string
		replicator, framed bool
		accepts            bool
		id                 int64
		role               string
	}{
		{"async master", func(c *Config) { c.BrokerRole = RoleAsyncMaster }, "*broker.classicMaster", false, false, true, 0, RoleAsyncMaster},
		{"sync master", func(c *Config) { c.BrokerRole = RoleSyncMaster }, "*broker.classicMaster", true, false, true, 0, RoleSyncMaster},
		{"slave", func(c *Config) { c.BrokerRole, c.BrokerID = RoleSlave, 3 }, "*broker.classicSlave", false, false, false, 3, RoleSlave},
		{"raft, not yet leader", func(c *Config) {
			c.Raft.EnableDLegerCommitLog = true
			c.Raft.DLegerPeers = "n0-127.0.0.1:1;n1-127.0.0.1:2"
			c.Raft.DLegerSelfId = "n1"
		}, "*broker.raftRole", false, true, false, 0, RoleSlave},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.edit(&cfg)
			b := &Broker{cfg: cfg, addr: "127.0.0.1:10911"}
			r := newReplicationRole(b)
			if got := typeName(r); got != c.wantType {
				t.Fatalf("role %s, want %s", got, c.wantType)
			}
			if _, isRaft := r.(*raftRole); isRaft != (b.raft != nil) {
				t.Fatalf("Broker.raft %v for role %s", b.raft, typeName(r))
			}
			var o store.Options
			r.storeOptions(&o)
			if (o.Replicator != nil) != c.replicator || o.Framed != c.framed {
				t.Fatalf("store options: replicator %v framed %v, want %v %v", o.Replicator != nil, o.Framed, c.replicator, c.framed)
			}
			if r.name() != c.role {
				t.Fatalf("role name %q, want %q", r.name(), c.role)
			}
			if b.raft != nil {
				return // a follower's id, refusal and forwarding need its node: raft_meta_internal_test.go
			}
			if r.acceptsWrites() != c.accepts || (r.refuseWrite() == nil) != c.accepts {
				t.Fatalf("accepts writes %v, refusal %v; want accepts %v", r.acceptsWrites(), r.refuseWrite(), c.accepts)
			}
			if resp := r.refuseWrite(); resp != nil && resp.Code != int32(remoting.ServiceNotAvailable) {
				t.Fatalf("refusal %s, want SERVICE_NOT_AVAILABLE", remoting.ResponseCode(resp.Code))
			}
			if id, addr, ext := r.registration(); id != c.id || addr != b.addr || ext != nil || r.brokerID() != c.id {
				t.Fatalf("registration %d %q %v, brokerID %d; want %d %q", id, addr, ext, r.brokerID(), c.id, b.addr)
			}
		})
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
