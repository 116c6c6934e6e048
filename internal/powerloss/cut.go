package powerloss

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CutFile is what Cut did to one file.
type CutFile struct {
	Path      string // relative to the root
	Size      int64
	Watermark int64 // durable up to here; zeros from here on
	// Dropped is how many bytes from the watermark to the last non-zero byte after it were
	// lost (0: nothing unsynced was written).
	Dropped int64
}

// Report is what Cut did to a store folder.
type Report struct {
	Files []CutFile // the files it cut (Dropped > 0), by path
	Kept  int       // journaled files that were fully synced
}

// Dropped is the total of the files' Dropped bytes.
func (r Report) Dropped() int64 {
	var n int64
	for _, f := range r.Files {
		n += f.Dropped
	}
	return n
}

// String sums the report up by top folder: "1234 unsynced bytes dropped (commitlog 496 in 1 file,
// consumequeue 738 in 4 files); 3 files synced".
func (r Report) String() string {
	if len(r.Files) == 0 {
		return fmt.Sprintf("nothing unsynced (%d files synced)", r.Kept)
	}
	type sum struct {
		bytes int64
		files int
	}
	by := map[string]*sum{}
	for _, f := range r.Files {
		top, _, _ := strings.Cut(f.Path, "/")
		if by[top] == nil {
			by[top] = &sum{}
		}
		by[top].bytes += f.Dropped
		by[top].files++
	}
	var parts []string
	for _, top := range slices.Sorted(maps.Keys(by)) {
		s := by[top]
		unit := "files"
		if s.files == 1 {
			unit = "file"
		}
		parts = append(parts, fmt.Sprintf("%s %d in %d %s", top, s.bytes, s.files, unit))
	}
	return fmt.Sprintf("%d unsynced bytes dropped (%s); %d files synced", r.Dropped(), strings.Join(parts, ", "), r.Kept)
}

// ErrNoJournal is returned by Cut for a folder without a journal: its store never journaled
// (EnvVar unset), so a cut cannot know what was synced.
var ErrNoJournal = errors.New("powerloss: no journal")

// Cut makes the store folder root what a power loss could have left of it, per its journal
// (doc.go): every journaled file is zeroed from its watermark to its end and synced, and the
// journal is rewritten to say all of it is durable now. The store's process must be dead.
func Cut(root string) (Report, error) { return CutAt(root, filepath.Join(root, FileName)) }

// CutAt is Cut with the journal at path (JournalPath, OpenAt).
func CutAt(root, path string) (Report, error) {
	marks, err := readJournal(path)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	var lines []byte
	for _, rel := range slices.Sorted(maps.Keys(marks)) {
		path := rel
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, filepath.FromSlash(rel))
		}
		cf, ok, err := cutFile(path, marks[rel])
		if err != nil {
			return rep, err
		}
		if !ok {
			continue // deleted since
		}
		cf.Path = rel
		if cf.Dropped > 0 {
			rep.Files = append(rep.Files, cf)
		} else {
			rep.Kept++
		}
		lines = fmt.Appendf(lines, "sync %d %s\n", cf.Size, rel)
	}
	if err := rewrite(path, lines); err != nil {
		return rep, err
	}
	return rep, nil
}

// readJournal replays the journal into a watermark per path.
func readJournal(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is missing", ErrNoJournal, path)
	}
	if err != nil {
		return nil, fmt.Errorf("powerloss: read journal: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1] // a torn last line: its sync acknowledged nothing yet
	}
	marks := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		num, rel, ok := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || n < 0 || rel == "" {
			return nil, fmt.Errorf("powerloss: %s line %d: %q is not an event", path, line, sc.Text())
		}
		if !apply(marks, kind, n, rel) {
			return nil, fmt.Errorf("powerloss: %s line %d: unknown event %q", path, line, kind)
		}
	}
	return marks, sc.Err()
}

// apply replays one event on marks; false for an unknown kind.
func apply(marks map[string]int64, kind string, n int64, rel string) bool {
	switch kind {
	case "create":
		marks[rel] = 0
	case "sync":
		marks[rel] = n
	case "cut":
		if cur, ok := marks[rel]; !ok || cur > n {
			marks[rel] = n
		}
	default:
		return false
	}
	return true
}

// cutFile zeroes path from mark to its end (keeping its size) and syncs it; ok is false when
// the file no longer exists.
func cutFile(path string, mark int64) (cf CutFile, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return cf, false, nil
	}
	if err != nil {
		return cf, false, fmt.Errorf("powerloss: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return cf, false, fmt.Errorf("powerloss: stat %s: %w", path, err)
	}
	cf.Size = st.Size()
	cf.Watermark = min(mark, cf.Size)
	if cf.Watermark == cf.Size {
		return cf, true, nil
	}
	last, err := lastNonZero(f, cf.Watermark, cf.Size)
	if err != nil {
		return cf, false, fmt.Errorf("powerloss: read %s: %w", path, err)
	}
	if last < 0 {
		return cf, true, nil // zeros already
	}
	cf.Dropped = last + 1 - cf.Watermark
	if err := f.Truncate(cf.Watermark); err != nil {
		return cf, false, fmt.Errorf("powerloss: cut %s at %d: %w", path, cf.Watermark, err)
	}
	if err := f.Truncate(cf.Size); err != nil {
		return cf, false, fmt.Errorf("powerloss: extend %s back to %d: %w", path, cf.Size, err)
	}
	if err := f.Sync(); err != nil {
		return cf, false, fmt.Errorf("powerloss: sync %s: %w", path, err)
	}
	return cf, true, nil
}

// lastNonZero is the offset of the last non-zero byte of f in [from, to), or -1.
func lastNonZero(f *os.File, from, to int64) (int64, error) {
	buf := make([]byte, 1<<20)
	last := int64(-1)
	for at := from; at < to; {
		n := min(int64(len(buf)), to-at)
		if _, err := f.ReadAt(buf[:n], at); err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				last = at + i
				break
			}
		}
		at += n
	}
	return last, nil
}

// rewrite replaces the journal with lines, durably.
func rewrite(path string, lines []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("powerloss: rewrite journal: %w", err)
	}
	_, werr := f.Write(lines)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("powerloss: rewrite journal: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("powerloss: rewrite journal: %w", err)
	}
	return nil
}
