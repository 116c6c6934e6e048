package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Disk is a broker's store on a disk of its own that a fault can fail, fill or slow down in the kernel,
// under the broker's real system calls (doc.go "Disk faults" says why this way). Two ext4 file systems on
// loop devices, one inside the other:
//
//	Dir/disks/<node>/outer.img   sparse file on the run's file system, the outer disk's image
//	  -> /dev/loopA, ext4 mounted at Dir/disks/<node>/outer (barrier=0)
//	       outer/store.img        sparse file, the store disk's image
//	         -> /dev/loopB, ext4 mounted at Node.Store (defaults: barriers on, errors=continue)
//
// The broker sees only the store disk. Fail shuts the outer file system down (FS_IOC_SHUTDOWN without a
// log flush), so every read or write loopB sends to its image fails: the store disk then returns EIO to
// the block layer as a dead disk does; the broker's write() calls still land in the page cache and its
// fsync, fdatasync and msync fail with EIO, and its journal aborts. Repair (with the broker stopped) is
// what an operator does after a disk error: unmount, mount the outer disk again (its journal replays), check
// the store disk with e2fsck and mount it; what the broker had not synced before the failure is gone. Fill
// takes every free block of the store disk (fallocate of a filler file), so the broker's next block
// allocation fails with ENOSPC, in a write() or in a page fault of a mapping (SIGBUS); Unfill frees them.
// Slow throttles the store disk's device (blkio.throttle.*_iops_device of the root blkio cgroup, cgroup
// v1), so every I/O the broker waits for (a sync's writes, a read of a page not cached) queues behind the
// limit; Unslow lifts it.
//
// All of it needs root (mount, losetup, the ioctl, the cgroup files): DiskSupport says what is missing.
// Safe for concurrent use; a fault and its heal come from one goroutine (the runner's).
type Disk struct {
	Name  string // the node's name
	Mount string // the store disk's mount point: the node's storePathRootDir
	dir   string // Dir/disks/<node>

	mu struct {
		sync.Mutex
		outerDev, storeDev string // /dev/loopN while attached
		devNum             string // the store disk's "major:minor" (blk-throttle rules)
		failed             bool   // Fail ran; Repair has not
		slowed             bool
	}
}

// diskSize is the store disk's size (a sparse image: only what the broker writes takes room); a run's
// store needs a few hundred MiB.
const diskSize = 4 << 30

// Paths of a disk's parts.
func (d *Disk) outerImg() string { return filepath.Join(d.dir, "outer.img") }
func (d *Disk) outerMnt() string { return filepath.Join(d.dir, "outer") }
func (d *Disk) storeImg() string { return filepath.Join(d.outerMnt(), "store.img") }
func (d *Disk) filler() string   { return filepath.Join(d.Mount, "disk-fault-filler") }

// blkioDir is the root blkio cgroup (v1) whose throttle rules Slow writes.
const blkioDir = "/sys/fs/cgroup/blkio"

// DiskSupport reports why the disk fault kinds cannot run on this machine (nil when they can): they need
// root, the loop devices, mkfs.ext4, e2fsck, losetup, mount, and cgroup v1's blkio throttling.
func DiskSupport() error {
	if os.Geteuid() != 0 {
		return errors.New("chaos: disk faults need root (loop devices, mount, FS_IOC_SHUTDOWN, blkio throttling)")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "e2fsck", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("chaos: disk faults need %s: %w", tool, err)
		}
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("chaos: disk faults need loop devices: %w", err)
	}
	for _, f := range []string{"blkio.throttle.write_iops_device", "blkio.throttle.read_iops_device"} {
		if err := unix.Access(filepath.Join(blkioDir, f), unix.W_OK); err != nil {
			return fmt.Errorf("chaos: disk-slow faults need cgroup v1 blkio throttling (%s): %w", filepath.Join(blkioDir, f), err)
		}
	}
	return nil
}

// NewDisk makes the node's disks under dir (Dir/disks/<node>) and mounts the store disk at mount.
func NewDisk(dir, name, mount string) (_ *Disk, err error) {
	d := &Disk{Name: name, Mount: mount, dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
		}
	}()
	for _, p := range []string{dir, d.outerMnt(), mount} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	// The outer disk holds the store disk's image and its own metadata.
	if err := makeExt4(d.outerImg(), diskSize+512<<20); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.attachOuterLocked(); err != nil {
		return nil, err
	}
	if err := makeExt4(d.storeImg(), diskSize); err != nil {
		return nil, err
	}
	if err := d.attachStoreLocked(); err != nil {
		return nil, err
	}
	return d, nil
}

// makeExt4 makes a sparse image of size bytes holding an empty ext4: no blocks reserved for root (a fill
// takes them all), few inodes and a small journal, written at once (lazy init would write the inode tables
// in the background after the mount).
func makeExt4(img string, size int64) error {
	f, err := os.OpenFile(img, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return run("mkfs.ext4", "-q", "-F", "-m", "0", "-N", "16384", "-J", "size=16",
		"-E", "lazy_itable_init=0,lazy_journal_init=1,nodiscard", img)
}

// attachOuterLocked attaches the outer image to a loop device and mounts it. barrier=0: the outer disk
// never fails a sync, so what the store disk flushed to it survives the outer disk's shutdown and
// remount whether or not the run's own disk flushed it; the store disk keeps its barriers. d.mu held.
func (d *Disk) attachOuterLocked() error {
	dev, err := output("losetup", "--find", "--show", d.outerImg())
	if err != nil {
		return err
	}
	d.mu.outerDev = dev
	return run("mount", "-t", "ext4", "-o", "barrier=0", dev, d.outerMnt())
}

// attachStoreLocked attaches the store image (direct I/O: no second copy in the outer disk's page cache)
// and mounts it at d.Mount, and clears any throttle rule a run that ended abruptly left on its device
// number. d.mu held.
func (d *Disk) attachStoreLocked() error {
	dev, err := output("losetup", "--find", "--show", "--direct-io=on", d.storeImg())
	if err != nil {
		return err
	}
	d.mu.storeDev = dev
	num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
	if err != nil {
		return err
	}
	d.mu.devNum = strings.TrimSpace(string(num))
	if err := d.throttleLocked(0); err != nil {
		return err
	}
	if err := run("mount", "-t", "ext4", dev, d.Mount); err != nil {
		return err
	}
	// The broker owns the whole store folder.
	_ = os.Remove(filepath.Join(d.Mount, "lost+found"))
	return nil
}

// FS_IOC_SHUTDOWN (linux/fs.h: _IOR('X', 125, __u32)) and its flag that drops the journal's pending
// transactions instead of writing them.
const (
	fsIocShutdown        = 0x8004587d
	fsShutdownNoLogFlush = 2
)

// Fail makes the store disk fail: every I/O it sends to its device from now on fails with EIO, until
// Repair.
func (d *Disk) Fail() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := os.Open(d.outerMnt())
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetPointerInt(int(f.Fd()), fsIocShutdown, fsShutdownNoLogFlush); err != nil {
		return fmt.Errorf("chaos: shut down %s (FS_IOC_SHUTDOWN): %w", d.outerMnt(), err)
	}
	d.mu.failed = true
	return nil
}

// Repair brings a failed disk back, as after replacing a failed disk's cable or controller: unmount both,
// mount the outer disk again, check the store disk (e2fsck -fy) and mount it. Nothing may hold a file of
// the store disk open (the broker is stopped). It returns e2fsck's summary line.
func (d *Disk) Repair() (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.detachLocked(); err != nil {
		return "", err
	}
	if err := d.attachOuterLocked(); err != nil {
		return "", err
	}
	out, err := exec.Command("e2fsck", "-f", "-y", d.storeImg()).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() <= 1 { // 1: errors corrected
		err = nil
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	summary := lines[len(lines)-1]
	if err != nil {
		return summary, fmt.Errorf("chaos: e2fsck %s: %w\n%s", d.storeImg(), err, out)
	}
	if err := d.attachStoreLocked(); err != nil {
		return summary, err
	}
	d.mu.failed = false
	return summary, nil
}

// Fill takes every free block of the store disk; it returns the bytes taken.
func (d *Disk) Fill() (int64, error) {
	f, err := os.OpenFile(d.filler(), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	off := st.Size()
	start := off
	for chunk := int64(1 << 30); chunk >= 4096; {
		err := unix.Fallocate(int(f.Fd()), 0, off, chunk)
		switch {
		case err == nil:
			off += chunk
		case errors.Is(err, unix.ENOSPC):
			chunk /= 2
		default:
			return off - start, fmt.Errorf("chaos: fill %s: %w", d.Mount, err)
		}
	}
	return off - start, nil
}

// Unfill frees what Fill took.
func (d *Disk) Unfill() error {
	if err := os.Remove(d.filler()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Free is the store disk's free space in bytes.
func (d *Disk) Free() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(d.Mount, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// Slow limits the store disk's device to iops reads and iops writes a second (0 lifts the limit).
func (d *Disk) Slow(iops int) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.throttleLocked(iops)
}

// throttleLocked writes the blk-throttle rules of the store disk's device; 0 removes them. d.mu held.
func (d *Disk) throttleLocked(iops int) error {
	if d.mu.devNum == "" {
		return nil
	}
	for _, f := range []string{"blkio.throttle.write_iops_device", "blkio.throttle.read_iops_device"} {
		rule := fmt.Sprintf("%s %d", d.mu.devNum, iops)
		if err := os.WriteFile(filepath.Join(blkioDir, f), []byte(rule), 0); err != nil {
			if iops == 0 && errors.Is(err, os.ErrNotExist) {
				continue // no blkio controller: nothing to lift (DiskSupport refuses to slow)
			}
			return fmt.Errorf("chaos: %s %q: %w", f, rule, err)
		}
	}
	d.mu.slowed = iops > 0
	return nil
}

// detachLocked lifts any throttle, unmounts both disks and detaches their loop devices. d.mu held.
func (d *Disk) detachLocked() error {
	var errs []error
	if d.mu.devNum != "" {
		errs = append(errs, d.throttleLocked(0))
	}
	if d.mu.storeDev != "" {
		errs = append(errs, unmount(d.Mount), run("losetup", "-d", d.mu.storeDev))
		d.mu.storeDev, d.mu.devNum = "", ""
	}
	if d.mu.outerDev != "" {
		errs = append(errs, unmount(d.outerMnt()), run("losetup", "-d", d.mu.outerDev))
		d.mu.outerDev = ""
	}
	return errors.Join(errs...)
}

// Close unmounts and detaches the disks (the images stay, with the broker's data: mount store.img from
// outer.img to look at it). The broker must be stopped.
func (d *Disk) Close() error {
	_ = d.Unfill()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.detachLocked()
}

// unmount unmounts dir if it is a mount point, retrying a busy one for a while (a process that just exited
// may still be closing its files).
func unmount(dir string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := unix.Unmount(dir, 0)
		if err == nil || errors.Is(err, unix.EINVAL) { // EINVAL: not a mount point (already unmounted)
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("chaos: unmount %s: %w", dir, err)
		}
		time.Sleep(100 * time.Millisecond) // pacing a retry of the kernel's answer, not a synchronisation
	}
}

// run runs a command, its output in the error.
func run(name string, args ...string) error {
	_, err := output(name, args...)
	return err
}

// output runs a command (at most a minute) and returns its trimmed standard output.
func output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("chaos: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
