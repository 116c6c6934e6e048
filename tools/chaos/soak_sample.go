package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sampled is one server process the soak samples: its process, its data folder (whose live files are left
// out of FDs and Maps) and its Prometheus endpoint.
type sampled struct {
	name    string
	node    *Node // nil for the name server
	proc    *Process
	dataDir string
	metrics string // host:port of /metrics
}

// sampleProc reads p's figures now; the process must be running (Pid != 0). /proc is read even while the
// process is paused; its /metrics then does not answer within the timeout, and Heap and Goroutines are -1.
func sampleProc(ctx context.Context, hc *http.Client, p sampled, pid int, now time.Time) Sample {
	s := Sample{At: now, Proc: p.name, Pid: pid, RSSAnon: -1, RSSFile: -1, Heap: -1, Goroutines: -1,
		FDs: -1, Maps: -1, StoreFDs: -1, StoreMaps: -1}
	proc := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(proc + "/status"); err == nil {
		st := parseStatus(b)
		s.RSSAnon, s.RSSFile = st["RssAnon"], st["RssFile"]
	}
	if b, err := os.ReadFile(proc + "/maps"); err == nil {
		s.Maps, s.StoreMaps = countMaps(b, p.dataDir, fileExists)
	}
	if ents, err := os.ReadDir(proc + "/fd"); err == nil {
		var targets []string
		for _, e := range ents {
			if t, err := os.Readlink(filepath.Join(proc, "fd", e.Name())); err == nil {
				targets = append(targets, t)
			}
		}
		s.FDs, s.StoreFDs = countFDs(targets, p.dataDir, fileExists)
	}
	if p.metrics != "" {
		if m, err := scrape(ctx, hc, p.metrics); err == nil {
			if v, ok := m["go_goroutines"]; ok {
				s.Goroutines = int64(v)
			}
			if v, ok := m["go_memstats_heap_inuse_bytes"]; ok {
				s.Heap = int64(v)
			}
		}
	}
	return s
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// parseStatus reads the "Key:   N kB" lines of /proc/PID/status into bytes (other lines are left out).
func parseStatus(b []byte) map[string]int64 {
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[key] = n << 10
		}
	}
	return out
}

// inStore reports whether path names a live file under dataDir ("" matches nothing); a path the kernel
// marks " (deleted)" is not live, nor is one gone by now.
func inStore(path, dataDir string, exists func(string) bool) bool {
	if dataDir == "" || strings.HasSuffix(path, " (deleted)") {
		return false
	}
	dir := filepath.Clean(dataDir) + string(filepath.Separator)
	return strings.HasPrefix(path, dir) && exists(path)
}

// countMaps counts the lines of /proc/PID/maps: those not naming a live file under dataDir, and those that do.
func countMaps(b []byte, dataDir string, exists func(string) bool) (other, store int64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		// address perms offset dev inode [path]; the path may hold spaces
		f := strings.SplitN(line, " ", 6)
		path := ""
		if len(f) == 6 {
			path = strings.TrimLeft(f[5], " ")
		}
		if inStore(path, dataDir, exists) {
			store++
		} else {
			other++
		}
	}
	return other, store
}

// countFDs counts a process's descriptors by their /proc/PID/fd link targets: those not naming a live
// file under dataDir (sockets, pipes, logs, deleted files), and those that do.
func countFDs(targets []string, dataDir string, exists func(string) bool) (other, store int64) {
	for _, t := range targets {
		if inStore(t, dataDir, exists) {
			store++
		} else {
			other++
		}
	}
	return other, store
}

// scrape reads the unlabelled samples of a Prometheus text page at http://addr/metrics.
func scrape(ctx context.Context, hc *http.Client, addr string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	return parseMetrics(b), nil
}

// parseMetrics reads "name value" lines of the Prometheus text format (comments and labelled samples are
// left out).
func parseMetrics(b []byte) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || line[0] == '#' || strings.Contains(line, "{") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out
}
