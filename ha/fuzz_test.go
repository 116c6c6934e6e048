package ha

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
)

// FuzzSlaveReadLoop: what a master (or anyone answering on its address) sends a slave. The slave's frame
// reader never panics, appends only bodies whose header offset is where its log ends, never more bytes than
// it was sent, and ends the session with an error when the stream ends or lies.
func FuzzSlaveReadLoop(f *testing.F) {
	frame := func(off int64, body string) []byte {
		b := make([]byte, HeaderSize, HeaderSize+len(body))
		putHeader(b, off, len(body))
		return append(b, body...)
	}
	f.Add(append(frame(0, "abc"), frame(3, "de")...))
	f.Add(frame(0, ""))
	f.Add(frame(5, "x"))
	bad := make([]byte, HeaderSize)
	binary.BigEndian.PutUint64(bad, 1)
	binary.BigEndian.PutUint32(bad[8:], 0x7fffffff)
	f.Add(bad)
	f.Fuzz(func(t *testing.T, stream []byte) {
		log := newMemLog(1 << 20)
		c, err := NewClient(DefaultConfig(), log, ClientOptions{FileSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		slave, master := net.Pipe()
		go func() {
			// The master side: drain the slave's reports while sending the stream, then hang up.
			go func() { _, _ = io.Copy(io.Discard, master) }()
			_, _ = master.Write(stream)
			_ = master.Close()
		}()
		s := &slaveSession{c: c, nc: slave, done: make(chan struct{})}
		if err := s.readLoop(); err == nil {
			t.Fatal("readLoop ended without an error")
		}
		_ = slave.Close()
		if n := log.MaxPhyOffset() - log.MinPhyOffset(); n > int64(len(stream)) {
			t.Fatalf("appended %d bytes from a stream of %d", n, len(stream))
		}
	})
}
