// Command diskbench measures the raw figures a broker's store is bounded by, on the folder given, in one
// run (scripts/bench-compare.sh and bench-scale.sh print them next to the brokers' figures):
//
//	write   sequential 1 MiB writes of --size bytes in all, then one fdatasync; MB/s including the sync
//	        (what a flusher that syncs large batches can reach)
//	fsync   --fsyncs serial 4 KiB writes each followed by fdatasync, at successive offsets of a file
//	        preallocated by the write test: syncs/s and latency p50/p99/max (what one fsync per message caps
//	        a broker at)
//	read    the write test's file read sequentially in 1 MiB reads after its pages were dropped from the
//	        page cache (fdatasync, then posix_fadvise DONTNEED on that file only): cold MB/s
//
// The file is removed at the end. --json prints one JSON object.
//
// diskbench --evict DIR measures nothing: it asks the kernel to drop the cached pages of every regular file
// in DIR (fdatasync, then posix_fadvise DONTNEED), for a cold read where drop_caches is not permitted. Pages a
// process has mapped stay.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// result is what diskbench prints.
type result struct {
	Dir          string  `json:"dir"`
	WriteBytes   int64   `json:"write_bytes"`
	WriteMBps    float64 `json:"write_mb_per_sec"`
	Fsyncs       int     `json:"fsyncs"`
	FsyncPerSec  float64 `json:"fsync_per_sec"`
	FsyncP50ms   float64 `json:"fsync_p50_ms"`
	FsyncP99ms   float64 `json:"fsync_p99_ms"`
	FsyncMaxms   float64 `json:"fsync_max_ms"`
	ColdReadMBps float64 `json:"cold_read_mb_per_sec"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(argv []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("diskbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", os.TempDir(), "folder on the disk to measure")
	size := fs.Int64("size", 1<<30, "bytes written by the write test (a multiple of 1 MiB)")
	fsyncs := fs.Int("fsyncs", 2000, "serial 4 KiB write+fdatasync rounds")
	asJSON := fs.Bool("json", false, "print one JSON object")
	evict := fs.String("evict", "", "only drop the cached pages of the files in this folder, and exit")
	if err := fs.Parse(argv); err != nil {
		return 2
	}
	if *evict != "" {
		if err := evictDir(*evict); err != nil {
			fmt.Fprintf(stderr, "diskbench: %v\n", err)
			return 1
		}
		return 0
	}
	var errs []error
	if *size < 1<<20 || *size%(1<<20) != 0 {
		errs = append(errs, fmt.Errorf("--size: %d is not a positive multiple of 1 MiB", *size))
	}
	if *fsyncs < 10 || int64(*fsyncs)*4096 > *size {
		errs = append(errs, fmt.Errorf("--fsyncs: %d is not within 10..--size/4096", *fsyncs))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "diskbench: %v\n", err)
		return 2
	}
	r, err := measure(*dir, *size, *fsyncs)
	if err != nil {
		fmt.Fprintf(stderr, "diskbench: %v\n", err)
		return 1
	}
	if *asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintf(stdout, "disk %s: sequential write %.0f MB/s (%d MiB, 1 MiB writes, one fdatasync); write+fdatasync 4 KiB: %.0f/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms; cold sequential read %.0f MB/s\n",
		r.Dir, r.WriteMBps, r.WriteBytes>>20, r.FsyncPerSec, r.FsyncP50ms, r.FsyncP99ms, r.FsyncMaxms, r.ColdReadMBps)
	return 0
}

func measure(dir string, size int64, fsyncs int) (*result, error) {
	f, err := os.CreateTemp(dir, "diskbench-*.dat")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	r := &result{Dir: filepath.Clean(dir), WriteBytes: size, Fsyncs: fsyncs}

	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i*7 + 3) // not zeros, in case the device compresses or skips them
	}
	start := time.Now()
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return nil, fmt.Errorf("write %s at %d: %w", f.Name(), off, err)
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return nil, fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	r.WriteMBps = float64(size) / (1 << 20) / time.Since(start).Seconds()

	lat := make([]time.Duration, fsyncs)
	small := buf[:4096]
	start = time.Now()
	for i := range lat {
		t := time.Now()
		if _, err := f.WriteAt(small, int64(i)*4096); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.Name(), err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return nil, fmt.Errorf("fdatasync %s: %w", f.Name(), err)
		}
		lat[i] = time.Since(t)
	}
	r.FsyncPerSec = float64(fsyncs) / time.Since(start).Seconds()
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	r.FsyncP50ms, r.FsyncP99ms, r.FsyncMaxms = ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1])

	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return nil, fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return nil, fmt.Errorf("fadvise %s: %w", f.Name(), err)
	}
	start = time.Now()
	for off := int64(0); off < size; off += int64(len(buf)) {
		if _, err := f.ReadAt(buf, off); err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", f.Name(), off, err)
		}
	}
	r.ColdReadMBps = float64(size) / (1 << 20) / time.Since(start).Seconds()
	return r, nil
}

// evictDir syncs every regular file in dir and advises the kernel to drop its cached pages.
func evictDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := evictFile(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func evictFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("fdatasync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise %s: %w", path, err)
	}
	return nil
}
