package message

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// recordRun encodes n records, topics alternating in runs (T0 T0 T1 T1 ...), bodies of different lengths.
func recordRun(t testing.TB, n int) ([]byte, []*MessageExt) {
	var b []byte
	var want []*MessageExt
	for i := range n {
		m := sampleExt()
		m.Topic = fmt.Sprintf("T%d", i/2)
		m.Body = []byte(fmt.Sprintf("body %d %s", i, make([]byte, i*7)))
		m.QueueOffset = int64(i)
		m.PhysicalOffset = int64(len(b))
		var err error
		if b, err = EncodeRecord(b, m); err != nil {
			t.Fatal(err)
		}
		d, err := DecodeMessage(b[m.PhysicalOffset:], true)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, d)
	}
	return b, want
}

// DecodeRecords gives what DecodeMessage gives record by record, with bodies that are slices of the
// input capped at their length, and one topic string for records in a row of the same topic.
func TestDecodeRecords(t *testing.T) {
	b, want := recordRun(t, 9)
	got, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d messages, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
		body := got[i].Body
		start := int(uintptr(unsafe.Pointer(unsafe.SliceData(body))) - uintptr(unsafe.Pointer(&b[0])))
		if start < 0 || start+len(body) > len(b) {
			t.Errorf("message %d: body is not a slice of the input", i)
		}
		if cap(body) != len(body) {
			t.Errorf("message %d: body cap %d, len %d: an append would write over the next record", i, cap(body), len(body))
		}
		if i%2 == 1 && unsafe.StringData(got[i].Topic) != unsafe.StringData(got[i-1].Topic) {
			t.Errorf("message %d: topic %q not shared with the one before", i, got[i].Topic)
		}
	}
	next := append(got[0].Body, 'x')
	if again, _ := DecodeRecords(b); !reflect.DeepEqual(again[1], want[1]) || string(next[:len(next)-1]) != string(want[0].Body) {
		t.Error("an append to a body changed the input")
	}
	if msgs, err := DecodeRecords(nil); err != nil || len(msgs) != 0 {
		t.Errorf("empty input: %d messages, %v", len(msgs), err)
	}
}

// A bad record ends the decoding with the messages before it and an error that wraps ErrCorruptRecord
// and names the record's offset; sizes that promise many tiny records do not make DecodeRecords allocate
// for them.
func TestDecodeRecordsMalformed(t *testing.T) {
	b, want := recordRun(t, 4)
	third := int(want[2].PhysicalOffset)
	for _, tc := range []struct {
		name string
		b    []byte
		keep int
	}{
		{"truncated in the third", b[:third+10], 2},
		{"third size zero", func() []byte {
			c := append([]byte(nil), b...)
			c[third], c[third+1], c[third+2], c[third+3] = 0, 0, 0, 0
			return c
		}(), 2},
		{"third magic bad", func() []byte { c := append([]byte(nil), b...); c[third+4] ^= 0xFF; return c }(), 2},
		{"three bytes left over", append(append([]byte(nil), b...), 1, 2, 3), 4},
	} {
		got, err := DecodeRecords(tc.b)
		if !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: %v does not wrap ErrCorruptRecord", tc.name, err)
		}
		if len(got) != tc.keep {
			t.Errorf("%s: %d messages before the error, want %d", tc.name, len(got), tc.keep)
		}
	}
	tiny := make([]byte, 1<<20)
	for off := 0; off+4 <= len(tiny); off += 4 {
		tiny[off+3] = 4 // every "record" 4 bytes long
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := DecodeRecords(tiny)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("1 MiB of 4-byte sizes: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<10 {
		t.Errorf("1 MiB of 4-byte sizes: %d bytes allocated", n)
	}
}

// FuzzDecodeRecords: never panics, and agrees with DecodeMessage walked record by record.
func FuzzDecodeRecords(f *testing.F) {
	fuzzSeedRecords(f)
	b, _ := recordRun(f, 3)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeRecords(b)
		off := 0
		for i, m := range got {
			want, werr := DecodeMessage(b[off:], true)
			if werr != nil || !reflect.DeepEqual(m, want) {
				t.Fatalf("message %d at %d: %+v, DecodeMessage %+v %v", i, off, m, want, werr)
			}
			off += int(m.StoreSize)
		}
		if err == nil && off != len(b) {
			t.Fatalf("no error, but %d of %d bytes decoded", off, len(b))
		}
		if err != nil {
			if _, werr := DecodeMessage(b[off:], true); werr == nil {
				t.Fatalf("error %v, but the record at %d decodes", err, off)
			}
		}
	})
}
