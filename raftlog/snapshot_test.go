package raftlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/store"
)

// TestSnapshotHeader: the header carries the metadata and the queue table through a round
// trip, leaves the files after it unread, still reads version 1 (metadata only), and refuses
// a damaged or lying table with an error that says what is wrong.
func TestSnapshotHeader(t *testing.T) {
	head := snapshotHead{meta: []byte(`{"topics":1}`), queues: []store.QueueNext{{Topic: "A", QueueID: 0, Next: 90}, {Topic: "B", QueueID: 7, Next: 1}}}
	b := encodeSnapshotHeader(head)
	r := bytes.NewReader(append(b, "files"...))
	got, err := readSnapshotHeader(r)
	if err != nil {
		t.Fatalf("readSnapshotHeader: %v", err)
	}
	if got.version != 2 || string(got.meta) != string(head.meta) || fmt.Sprint(got.queues) != fmt.Sprint(head.queues) {
		t.Fatalf("read %+v, want %+v", got, head)
	}
	if rest, _ := io.ReadAll(r); string(rest) != "files" {
		t.Fatalf("after the header: %q", rest)
	}

	// Version 1, as an older node wrote it: magic, version, metadata length and CRC, metadata.
	v1 := binary.BigEndian.AppendUint32(nil, snapshotMagic)
	v1 = binary.BigEndian.AppendUint32(v1, 1)
	v1 = binary.BigEndian.AppendUint32(v1, uint32(len(head.meta)))
	v1 = binary.BigEndian.AppendUint32(v1, crc32.Checksum(head.meta, castagnoli))
	v1 = append(v1, head.meta...)
	got, err = readSnapshotHeader(bytes.NewReader(v1))
	if err != nil || got.version != 1 || string(got.meta) != string(head.meta) || got.queues != nil {
		t.Fatalf("version 1: %+v, %v", got, err)
	}

	tableAt := snapshotHeaderSize + len(head.meta)
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
		want string
	}{
		{"table CRC", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "queue table CRC mismatch"},
		{"table cut", func(b []byte) []byte { return b[:len(b)-3] }, "snapshot queue table: 31 of 34 bytes: unexpected EOF"},
		{"table too long", func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[tableAt:], maxQueueTable+1)
			return b
		}, "over the limit"},
		{"topic length lies", func(b []byte) []byte {
			table := encodeQueueTable(head.queues[:1])
			binary.BigEndian.PutUint16(table[4:], 200)
			return withTable(b[:tableAt], table)
		}, "entry 0 cut short"},
		{"count lies", func(b []byte) []byte {
			table := encodeQueueTable(head.queues)
			binary.BigEndian.PutUint32(table, 1)
			return withTable(b[:tableAt], table)
		}, "bytes after 1 queues"},
		{"negative offset", func(b []byte) []byte {
			return withTable(b[:tableAt], encodeQueueTable([]store.QueueNext{{Topic: "A", Next: -1}}))
		}, "next -1"},
		{"version 3", func(b []byte) []byte { b[7] = 3; return b }, "version 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readSnapshotHeader(bytes.NewReader(tc.edit(bytes.Clone(b))))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// withTable appends a queue table with its length and CRC to a header's first part.
func withTable(b, table []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(table)))
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(table, castagnoli))
	return append(b, table...)
}

// FuzzSnapshotHeader: any bytes read as a snapshot header give a header or an error, never a
// panic, and a header read encodes again to what was read (version 2).
func FuzzSnapshotHeader(f *testing.F) {
	f.Add(encodeSnapshotHeader(snapshotHead{meta: []byte("m"), queues: []store.QueueNext{{Topic: "A", QueueID: 1, Next: 2}}}))
	f.Add(encodeSnapshotHeader(snapshotHead{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		head, err := readSnapshotHeader(r)
		if err != nil || head.version != 2 {
			return
		}
		if again := encodeSnapshotHeader(head); !bytes.Equal(again, b[:len(b)-r.Len()]) {
			t.Fatalf("read %+v from %x, encodes to %x", head, b, again)
		}
	})
}
