package store

import (
	"path/filepath"
	"testing"
)

// TestAppendRawWritesNewPagesWithPwrite: ConsumeQueue units (20 bytes) rarely start a page; one
// that crosses into a page not written yet goes in with pwrite too, so no store through the
// mapping faults on a hole of the sparse file. Such a fault reads around it: it filled the
// device's read-ahead window of the file with zeros (8 MiB here, capped at the file's end),
// which is what made 100 topics x 8 queues cost the broker half its CPU. Observed through
// mincore: after five pages of units, only the pages written are in the page cache. (On a file
// system without read-ahead, tmpfs, the faults fill nothing and this cannot tell.)
func TestAppendRawWritesNewPagesWithPwrite(t *testing.T) {
	const size = 300_000 * cqUnitSize // a ConsumeQueue file
	f, err := createMappedFile(filepath.Join(t.TempDir(), "00000000000000000000"), 0, size, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.destroy(true)
	var unit [cqUnitSize]byte
	const units = 5*osPageSize/cqUnitSize + 10 // into the sixth page
	for i := range units {
		putUnit(unit[:], cqUnit{phy: int64(i) * 100, size: 100, tags: int64(i)})
		f.appendRaw(unit[:])
	}
	for i := range units { // every unit reads back through the mapping
		if u := readUnit(f.data[i*cqUnitSize:]); u.phy != int64(i)*100 || u.tags != int64(i) {
			t.Fatalf("unit %d reads %+v", i, u)
		}
	}
	resident, _, err := residentPages(f.data)
	if err != nil {
		t.Skip(err)
	}
	written := (units*cqUnitSize + osPageSize - 1) / osPageSize
	if resident > written {
		t.Fatalf("%d pages of the file in the page cache after writing %d: the stores through the mapping faulted on holes and read around them", resident, written)
	}
}
