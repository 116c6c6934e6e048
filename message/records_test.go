package message

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// twoRecords encodes two records back to back, as a Raft message entry carries them.
func twoRecords(t *testing.T) []byte {
	t.Helper()
	b, err := EncodeRecord(nil, sampleExt())
	if err != nil {
		t.Fatal(err)
	}
	second := sampleExt()
	second.Body = []byte("second")
	if b, err = EncodeRecord(b, second); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPatchRecordsPlacesRunAtItsOffset(t *testing.T) {
	b := twoRecords(t)
	first := int(binary.BigEndian.Uint32(b))
	const phy = 1 << 30
	n, err := PatchRecords(b, phy)
	if err != nil || n != 2 {
		t.Fatalf("PatchRecords = %d, %v; want 2 records", n, err)
	}
	for i, at := range []int{0, first} {
		v, err := ParseRecord(b[at:])
		if err != nil {
			t.Fatal(err)
		}
		if v.PhysicalOffset != phy+int64(at) || v.QueueOffset != 0 {
			t.Errorf("record %d: physical offset %d, queue offset %d; want %d, 0", i, v.PhysicalOffset, v.QueueOffset, phy+int64(at))
		}
	}
	if n, err := CheckRecords(b, phy, true); err != nil || n != 2 {
		t.Errorf("CheckRecords of the patched run = %d, %v", n, err)
	}
}

func TestCheckRecordsRefusesWhatRecoveryMustCut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mangle  func(b []byte, first int) []byte
		phy     int64
		crc     bool
		want    string
		records int
	}{
		{"second record at the wrong offset", func(b []byte, first int) []byte {
			binary.BigEndian.PutUint64(b[first+OffPhysicalOffset:], 7)
			return b
		}, 100, false, "record 1 at ", 1},
		{"run placed elsewhere", func(b []byte, _ int) []byte { return b }, 200, false, "record 0 at 200 has physical offset 100", 0},
		{"body CRC of the second record", func(b []byte, first int) []byte {
			v, err := ParseRecord(b[first:])
			if err != nil {
				panic(err)
			}
			v.Body[0]++ // the view aliases b
			return b
		}, 100, true, "body CRC", 1},
		{"torn second record", func(b []byte, first int) []byte { return b[:first+10] }, 100, false, "record 1 at ", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := twoRecords(t)
			first := int(binary.BigEndian.Uint32(b))
			if _, err := PatchRecords(b, 100); err != nil {
				t.Fatal(err)
			}
			b = tc.mangle(b, first)
			n, err := CheckRecords(b, tc.phy, tc.crc)
			if !errors.Is(err, ErrCorruptRecord) || !strings.Contains(err.Error(), tc.want) || n != tc.records {
				t.Errorf("CheckRecords = %d, %v; want %d records and an ErrCorruptRecord naming %q", n, err, tc.records, tc.want)
			}
		})
	}
}

func TestCheckRecordsWithoutCRCTakesAChangedBody(t *testing.T) {
	b := twoRecords(t)
	if _, err := PatchRecords(b, 0); err != nil {
		t.Fatal(err)
	}
	v, err := ParseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	v.Body[0]++
	if n, err := CheckRecords(b, 0, false); err != nil || n != 2 {
		t.Errorf("CheckRecords without CRC = %d, %v; want 2 records (framing only)", n, err)
	}
}
