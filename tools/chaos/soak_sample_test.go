package chaos

import (
	"testing"
	"time"
)

func TestSoakParseStatus(t *testing.T) {
	st := parseStatus([]byte("Name:\tmqbroker\nVmRSS:\t   51200 kB\nRssAnon:\t   20480 kB\nRssFile:\t   30720 kB\nThreads:\t12\n"))
	if st["RssAnon"] != 20<<20 || st["RssFile"] != 30<<20 || st["VmRSS"] != 50<<20 {
		t.Fatalf("parsed %v", st)
	}
	if _, ok := st["Threads"]; ok {
		t.Fatalf("a line without kB was read: %v", st)
	}
}

// TestSoakCountMapsAndFDs: the store's live files are counted apart; anonymous mappings, libraries, sockets,
// files elsewhere and deleted store files (a leak the soak must see) count as the process's own.
func TestSoakCountMapsAndFDs(t *testing.T) {
	live := map[string]bool{"/data/master/commitlog/00000000000000000000": true,
		"/data/master/consumequeue/T/0/00000000000000000000": true}
	exists := func(p string) bool { return live[p] }
	maps := `00400000-00c00000 r-xp 00000000 08:01 123 /usr/bin/mqbroker
7f0000000000-7f0001000000 rw-s 00000000 08:01 456 /data/master/commitlog/00000000000000000000
7f0001000000-7f0002000000 rw-s 00000000 08:01 457 /data/master/commitlog/00000000000001048576 (deleted)
7f0002000000-7f0002100000 rw-s 00000000 08:01 458 /data/master/consumequeue/T/0/00000000000000000000
7f0003000000-7f0004000000 rw-p 00000000 00:00 0 
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
7f0005000000-7f0006000000 rw-s 00000000 08:01 459 /data/master2/commitlog/00000000000000000000
`
	other, store := countMaps([]byte(maps), "/data/master", exists)
	if other != 5 || store != 2 {
		t.Fatalf("maps: other %d store %d, want 5 and 2", other, store)
	}
	fds := []string{"socket:[1]", "pipe:[2]", "/data/master/commitlog/00000000000000000000", "/data/master/lock (deleted)",
		"/tmp/x.log", "anon_inode:[eventpoll]"}
	other, store = countFDs(fds, "/data/master", exists)
	if other != 5 || store != 1 {
		t.Fatalf("fds: other %d store %d, want 5 and 1", other, store)
	}
	if other, store = countFDs(fds, "", exists); other != 6 || store != 0 {
		t.Fatalf("no data folder: other %d store %d, want 6 and 0", other, store)
	}
}

func TestSoakParseMetrics(t *testing.T) {
	m := parseMetrics([]byte("# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 131\n" +
		"go_memstats_heap_inuse_bytes 1.2345e+07\nrocketmq_messages_in_total{topic=\"T\"} 5\n"))
	if m["go_goroutines"] != 131 || m["go_memstats_heap_inuse_bytes"] != 12345000 || len(m) != 2 {
		t.Fatalf("parsed %v", m)
	}
}

// TestSoakSchedule: faults fit between the warm-up and the quiet end, and the config's limits are named.
func TestSoakSchedule(t *testing.T) {
	c := DefaultSoakConfig()
	c.Faults.Seed = 18
	s, err := c.SoakSchedule()
	if err != nil {
		t.Fatal(err)
	}
	window := c.Duration - c.Bounds.Warmup - c.Quiet
	if len(s.Faults) < 10 || s.Length() > window {
		t.Fatalf("%d faults over %v, window %v", len(s.Faults), s.Length(), window)
	}
	c.Duration = 4 * time.Minute
	if err := c.Validate(); err == nil {
		t.Fatal("a 4m soak with a 2m warm-up, a 2m quiet end and 4 samples was accepted")
	}
}
