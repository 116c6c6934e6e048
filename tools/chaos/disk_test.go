package chaos

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newTestDisk makes a Disk under the test's folder, or skips when the machine cannot (DiskSupport).
func newTestDisk(t *testing.T) *Disk {
	t.Helper()
	if err := DiskSupport(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	d, err := NewDisk(filepath.Join(dir, "disks", "n"), "n", filepath.Join(dir, "n"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

// writeSync writes b at off in f and fdatasyncs it; the errors of both.
func writeSync(f *os.File, b []byte, off int64) (werr, serr error) {
	_, werr = f.WriteAt(b, off)
	return werr, unix.Fdatasync(int(f.Fd()))
}

// TestDiskFailRepair: on a failed disk write() still lands in the page cache and fdatasync answers EIO, as
// a dead disk's would; after Repair what was synced before the failure is there, and what was written after
// it is not (the page cache of a failed disk is not written back).
func TestDiskFailRepair(t *testing.T) {
	d := newTestDisk(t)
	path := filepath.Join(d.Mount, "f")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	synced := make([]byte, 64<<10)
	for i := range synced {
		synced[i] = 's'
	}
	if werr, serr := writeSync(f, synced, 0); werr != nil || serr != nil {
		t.Fatalf("before the fault: write %v, sync %v", werr, serr)
	}
	if err := d.Fail(); err != nil {
		t.Fatal(err)
	}
	lost := make([]byte, 64<<10)
	for i := range lost {
		lost[i] = 'l'
	}
	werr, serr := writeSync(f, lost, int64(len(synced)))
	if werr != nil || !errors.Is(serr, unix.EIO) {
		t.Fatalf("after Fail: write %v (want nil), fdatasync %v (want EIO)", werr, serr)
	}
	f.Close()
	if _, err := d.Repair(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(synced) || !slices.Equal(got[:len(synced)], synced) {
		t.Fatalf("after Repair: %d bytes, want the %d synced first", len(got), len(synced))
	}
	if slices.Contains(got, 'l') {
		t.Fatalf("after Repair: bytes whose sync failed are there")
	}
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if werr, serr := writeSync(f, synced, 0); werr != nil || serr != nil {
		t.Fatalf("after Repair: write %v, sync %v", werr, serr)
	}
}

// TestDiskFill: a filled disk answers ENOSPC to a write that needs a block, and to none once Unfill freed
// them.
func TestDiskFill(t *testing.T) {
	d := newTestDisk(t)
	n, err := d.Fill()
	if err != nil {
		t.Fatal(err)
	}
	if free, _ := d.Free(); n < diskSize/2 || free != 0 {
		t.Fatalf("Fill took %d bytes, %d left free", n, free)
	}
	f, err := os.OpenFile(filepath.Join(d.Mount, "f"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 1<<20), 0); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("write on a full disk: %v, want ENOSPC", err)
	}
	if err := d.Unfill(); err != nil {
		t.Fatal(err)
	}
	if werr, serr := writeSync(f, make([]byte, 1<<20), 0); werr != nil || serr != nil {
		t.Fatalf("after Unfill: write %v, sync %v", werr, serr)
	}
}

// TestDiskSlow: with the device throttled to 5 I/Os a second, a write and fdatasync of 4 KiB takes many
// times what it took just before without the limit (the median of 5 each, measured in this test), and
// again about what it took once the limit is lifted.
func TestDiskSlow(t *testing.T) {
	d := newTestDisk(t)
	f, err := os.OpenFile(filepath.Join(d.Mount, "f"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	median := func() time.Duration {
		var ds []time.Duration
		for i := range 5 {
			t0 := time.Now()
			if werr, serr := writeSync(f, make([]byte, 4096), int64(i)*4096); werr != nil || serr != nil {
				t.Fatalf("write %v, sync %v", werr, serr)
			}
			ds = append(ds, time.Since(t0))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	before := median()
	if err := d.Slow(5); err != nil {
		t.Fatal(err)
	}
	slow := median()
	if err := d.Slow(0); err != nil {
		t.Fatal(err)
	}
	after := median()
	t.Logf("median write+fdatasync of 4 KiB: %v, throttled %v, after %v", before, slow, after)
	if slow < 10*before || slow < 10*after {
		t.Fatalf("throttled %v, not 10 times %v before and %v after", slow, before, after)
	}
}
