package namesrv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/atomicfile"
)

// A restarted name server knows no broker until each registers again, up to a registration period (30 s)
// later; meanwhile it would answer routes that lack the groups not back yet, and clients would take them
// for the truth until their next poll (producers skipping those groups, consumers rebalancing their queues
// away). RocketMQ 5 can wait instead (needWaitForService, off by default): for waitSecondsForService (45 s)
// after its start it answers GET_ROUTEINFO_BY_TOPIC with SYSTEM_ERROR "name server not ready", and clients
// keep their routes or ask another name server.
//
// This one waits only for what it knew: it keeps the broker names whose queue data it routed, with how many
// topics each, in brokerNames.json next to kvConfig.json (rewritten when they change), and after a restart
// answers "name server not ready" until each of them routes again as many topics as it did, or its master
// has begun its next (periodic) registration round (the table it sent again proves the round before was
// whole: a broker that deleted topics meanwhile), or waitSecondsForService has passed (a group that died
// meanwhile does not come back). A split table's first chunk is thus not taken for the whole: the routes
// of the topics of its other chunks would lack the group. A first start, or a name server that routed
// nothing, serves at once; so does one with needWaitForService=false. The name server serves everything
// else (registrations, the cluster info, the topic lists) meanwhile, as RocketMQ does. A file of an
// earlier version, names without counts, waits for one topic of each.

// brokerNamesFile is the file of the broker names a name server routes, beside kvConfig.json.
const brokerNamesFile = "brokerNames.json"

// remarkNotReady is RocketMQ 5's remark while it waits for registrations.
const remarkNotReady = "name server not ready"

type brokerNamesDoc struct {
	BrokerNames []string       `json:"brokerNames"`
	Topics      map[string]int `json:"topics,omitempty"` // per broker name, how many topics it routed
}

// readiness is whether routes may be answered, and the file it is decided from.
type readiness struct {
	path   string
	logger *slog.Logger
	ready  atomic.Bool
	mu     struct {
		sync.Mutex
		waiting  map[string]int // broker names not back yet: how many topics they routed
		deadline time.Time
		saved    map[string]int // the names and counts last written
	}
	wake chan struct{} // capacity 1: the names or their topic counts changed
}

// newReadiness reads the broker names the name server routed before it stopped; with wait, routes wait
// for them (at most waitFor).
func newReadiness(kvPath string, wait bool, waitFor time.Duration, now time.Time, logger *slog.Logger) (*readiness, error) {
	r := &readiness{path: filepath.Join(filepath.Dir(kvPath), brokerNamesFile), logger: logger, wake: make(chan struct{}, 1)}
	data, err := os.ReadFile(r.path)
	var doc brokerNamesDoc
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("namesrv: read %s: %w", r.path, err)
	case len(data) > 0:
		if err := json.Unmarshal(data, &doc); err != nil {
			// Only a wait depends on it: warn, start serving, and write it anew.
			logger.Warn("namesrv: the broker names of the last run do not read: not waiting for them", "file", r.path, "err", err)
			doc.BrokerNames = nil
		}
	}
	r.mu.saved = make(map[string]int, len(doc.BrokerNames))
	for _, n := range doc.BrokerNames {
		r.mu.saved[n] = max(doc.Topics[n], 1)
	}
	if !wait || len(r.mu.saved) == 0 || waitFor <= 0 {
		r.ready.Store(true)
		return r, nil
	}
	r.mu.waiting = maps.Clone(r.mu.saved)
	r.mu.deadline = now.Add(waitFor)
	logger.Info("namesrv: routes wait for the brokers of the last run to register again (needWaitForService)",
		"brokerNames", len(doc.BrokerNames), "atMost", waitFor)
	return r, nil
}

// serving reports whether routes are answered at now.
func (r *readiness) serving(now time.Time) bool {
	if r.ready.Load() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.After(r.mu.deadline) {
		r.logger.Warn("namesrv: serving routes: waitSecondsForService passed before every broker of the last run registered again",
			"missing", slices.Sorted(maps.Keys(r.mu.waiting)))
		r.mu.waiting = nil
		r.ready.Store(true)
	}
	return r.ready.Load()
}

// back notes the broker names that route their topics again (routesAgain: RouteInfoManager.RoutesAgain);
// routes are served once none is missing.
func (r *readiness) back(routesAgain func(brokerName string, topics int) bool) {
	if r.ready.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, topics := range r.mu.waiting {
		if routesAgain(n, topics) {
			delete(r.mu.waiting, n)
		}
	}
	if len(r.mu.waiting) == 0 && !r.ready.Load() {
		r.logger.Info("namesrv: serving routes: every broker of the last run registered again")
		r.ready.Store(true)
	}
}

// changed wakes the writer of the file (a non-blocking send).
func (r *readiness) changed() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// persist writes the broker names and their topic counts to the file when they differ from what it holds.
func (r *readiness) persist(topics map[string]int) {
	r.mu.Lock()
	same := maps.Equal(r.mu.saved, topics)
	r.mu.Unlock()
	if same {
		return
	}
	doc := brokerNamesDoc{BrokerNames: slices.Sorted(maps.Keys(topics)), Topics: topics}
	data, _ := json.Marshal(doc) // cannot fail: strings and ints
	if err := atomicfile.Write(r.path, data, 0o644); err != nil {
		r.logger.Error("namesrv: broker names not saved: a restart will not wait for them", "file", r.path, "err", err)
		return
	}
	r.mu.Lock()
	r.mu.saved = topics
	r.mu.Unlock()
}

// persistLoop writes the broker names and counts whenever they change, until stop closes (once more then).
func (s *Server) persistLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			s.ready.persist(s.routes.RoutedBrokerTopics())
			return
		case <-s.ready.wake:
			s.ready.persist(s.routes.RoutedBrokerTopics())
		}
	}
}
