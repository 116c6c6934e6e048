package broker_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/internal/testutil"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// eioDisk is store.FileOps whose CommitLog syncs fail with EIO while failing is set.
type eioDisk struct {
	store.SysFileOps
	failing atomic.Bool
}

func (d *eioDisk) Sync(f *os.File) error {
	if d.failing.Load() && filepath.Base(filepath.Dir(f.Name())) == "commitlog" {
		return syscall.EIO
	}
	return d.SysFileOps.Sync(f)
}

// pullBodies pulls queue 0 of topic from offset 0 until at least want messages come back (the dispatch to
// the ConsumeQueue runs after the acknowledgement, so a pull right after a send may not see it yet) and
// returns the bodies read.
func pullBodies(t *testing.T, w *wire, topic string, want int) []string {
	t.Helper()
	var out []string
	testutil.WaitFor(t, 20*time.Second, fmt.Sprintf("a pull of %d messages of %s", want, topic), func() bool {
		resp := w.pull("disk-readers", topic, 0, 0, 0, "*")
		out = out[:0]
		if resp.Code == int32(remoting.PullNotFound) {
			return false // nothing dispatched yet
		}
		expectCode(t, "pull", resp, remoting.Success)
		for body := resp.Body; len(body) >= 4; {
			size := int(binary.BigEndian.Uint32(body))
			m, err := message.DecodeMessage(body[:size], true)
			if err != nil {
				t.Fatalf("decode a pulled message: %v", err)
			}
			out = append(out, string(m.Body))
			body = body[size:]
		}
		return len(out) >= want
	})
	return out
}

// TestBrokerAfterFsyncEIO: over the wire, a SYNC_FLUSH broker whose CommitLog fdatasync fails with EIO
// answers the send it was for FLUSH_DISK_TIMEOUT (never SEND_OK), refuses later sends with
// SERVICE_NOT_AVAILABLE naming the cause, and keeps answering heartbeats, pulls of what it holds and admin
// requests. Recovery is a restart on the same folder once the disk is sound (after a failed fsync no retry
// can prove the data durable, store/doc.go "Disk faults"): every acknowledged message is there and sends
// are acknowledged again.
func TestBrokerAfterFsyncEIO(t *testing.T) {
	cfg := cluster.TestBrokerConfig(t, "", "diskfault")
	cfg.FlushDiskType = store.SyncFlush
	disk := &eioDisk{}
	b := startBrokerWith(t, cfg, broker.Options{FileOps: disk})
	w := newWire(t, b.Addr())
	const topic = "DiskFault"
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	var acked []string
	for i := range 3 {
		body := fmt.Sprintf("acked-%d", i)
		expectCode(t, "send before the fault", w.send(topic, 0, []byte(body), ""), remoting.Success)
		acked = append(acked, body)
	}

	disk.failing.Store(true)
	expectCode(t, "send whose fsync fails", w.send(topic, 0, []byte("unsynced"), ""), remoting.FlushDiskTimeout)
	expectCode(t, "send after the failed fsync", w.send(topic, 0, []byte("refused"), ""), remoting.ServiceNotAvailable,
		"not writable", "input/output error", "reopen")
	disk.failing.Store(false) // the disk answers again; the broker must still refuse: nothing proves the pages reached it
	expectCode(t, "send once fsync works again", w.send(topic, 0, []byte("refused-too"), ""), remoting.ServiceNotAvailable,
		"not writable")

	heartbeat(t, w, "disk-client", "disk-readers")
	got := pullBodies(t, w, topic, len(acked))
	if len(got) < len(acked) || fmt.Sprint(got[:len(acked)]) != fmt.Sprint(acked) {
		t.Fatalf("pull after the fault: %q, want %q first", got, acked)
	}
	if info := runtimeInfo(t, w); len(info) == 0 {
		t.Fatal("GET_BROKER_RUNTIME_INFO answered nothing after the fault")
	}

	if err := b.Close(); err != nil {
		t.Logf("close after the fault: %v", err)
	}
	b2 := startBrokerWith(t, cfg, broker.Options{})
	w2 := newWire(t, b2.Addr())
	got = pullBodies(t, w2, topic, len(acked))
	if len(got) < len(acked) || fmt.Sprint(got[:len(acked)]) != fmt.Sprint(acked) {
		t.Fatalf("pull after the restart: %q, want %q first", got, acked)
	}
	resp := w2.send(topic, 0, []byte("after"), "")
	expectCode(t, "send after the restart", resp, remoting.Success)
	if off, _ := strconv.Atoi(resp.ExtFields["queueOffset"]); off < len(acked) {
		t.Fatalf("send after the restart took queue offset %d, below the %d acknowledged before", off, len(acked))
	}
}

// heldDisk is store.FileOps whose CommitLog syncs wait, while hold is set, until it is closed (a disk
// that takes as long as the test wants); held gets a token when a sync starts waiting.
type heldDisk struct {
	store.SysFileOps
	hold atomic.Pointer[chan struct{}]
	held chan struct{}
}

func (d *heldDisk) Sync(f *os.File) error {
	if h := d.hold.Load(); h != nil && filepath.Base(filepath.Dir(f.Name())) == "commitlog" {
		select {
		case d.held <- struct{}{}:
		default:
		}
		<-*h
	}
	return d.SysFileOps.Sync(f)
}

// TestBrokerWithASlowFsync: while a CommitLog fdatasync hangs, the send waiting for it is not answered,
// but heartbeats, pulls and admin requests are (their worker pools never wait for the disk); once the sync
// returns, the send is acknowledged and the broker takes sends as before.
func TestBrokerWithASlowFsync(t *testing.T) {
	cfg := cluster.TestBrokerConfig(t, "", "slowdisk")
	cfg.FlushDiskType = store.SyncFlush
	cfg.SyncFlushTimeout = 60000
	disk := &heldDisk{held: make(chan struct{}, 1)}
	b := startBrokerWith(t, cfg, broker.Options{FileOps: disk})
	w := newWire(t, b.Addr())
	const topic = "SlowDisk"
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	expectCode(t, "send before", w.send(topic, 0, []byte("before"), ""), remoting.Success)

	hold := make(chan struct{})
	disk.hold.Store(&hold)
	answered := make(chan *remoting.Command, 1)
	sender := newWire(t, b.Addr())
	go func() { answered <- sender.send(topic, 0, []byte("slow"), "") }()
	<-disk.held // the flusher is inside the sync
	heartbeat(t, w, "slow-client", "slow-readers")
	if got := pullBodies(t, w, topic, 1); len(got) == 0 || got[0] != "before" {
		t.Fatalf("pull during the slow sync: %q", got)
	}
	if len(runtimeInfo(t, w)) == 0 {
		t.Fatal("GET_BROKER_RUNTIME_INFO answered nothing during the slow sync")
	}
	select {
	case resp := <-answered:
		t.Fatalf("the send was answered (%s) while its fsync hung", remoting.ResponseCode(resp.Code))
	default:
	}
	disk.hold.Store(nil)
	close(hold)
	expectCode(t, "send whose fsync was slow", <-answered, remoting.Success)
	expectCode(t, "send after", w.send(topic, 0, []byte("after"), ""), remoting.Success)
}

// TestBrokerReadErrorOnAnOldFile: over the wire, the first CommitLog file stops reading (cut beneath
// its mapping, so its pages fault as a failing disk's do). A pull of a message in it is answered
// SYSTEM_ERROR naming the file, and the broker stays up: heartbeats, sends, pulls of later messages and
// admin requests are answered. Once the file reads again, the same pull returns the messages.
func TestBrokerReadErrorOnAnOldFile(t *testing.T) {
	cfg := cluster.TestBrokerConfig(t, "", "readfault")
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.MaxMessageSize = 8 << 10
	b := startBrokerWith(t, cfg, broker.Options{})
	w := newWire(t, b.Addr())
	const topic = "ReadFault"
	expectCode(t, "create", w.call(remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1",
		"writeQueueNums": "1", "perm": "6"}, nil), remoting.Success)
	body := make([]byte, 1000)
	var last int64
	for i := 0; last < 2*cfg.MappedFileSizeCommitLog; i++ {
		copy(body, fmt.Sprintf("old-%04d", i))
		resp := w.send(topic, 0, body, "")
		expectCode(t, "send", resp, remoting.Success)
		last, _ = strconv.ParseInt(resp.ExtFields["queueOffset"], 10, 64)
		last *= int64(len(body)) // a lower bound of the physical end: every record is longer than its body
	}
	first := filepath.Join(cfg.StorePathRootDir, "commitlog", "00000000000000000000")
	saved, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(first, 0); err != nil {
		t.Fatal(err)
	}

	heartbeat(t, w, "read-fault-client", "disk-readers")
	expectCode(t, "pull from the unreadable file", w.pull("disk-readers", topic, 0, 0, 0, "*"), remoting.SystemError,
		"read error", "00000000000000000000")
	expectCode(t, "send after the read error", w.send(topic, 0, []byte("new"), ""), remoting.Success)
	if info := runtimeInfo(t, w); len(info) == 0 {
		t.Fatal("GET_BROKER_RUNTIME_INFO answered nothing after the read error")
	}

	if err := os.WriteFile(first, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	got := pullBodies(t, w, topic, 1)
	if len(got) == 0 || got[0][:8] != "old-0000" {
		t.Fatalf("pull once the file reads again: %d messages, first %.8q", len(got), got)
	}
}
