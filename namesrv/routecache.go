package namesrv

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rocketraft/rocketraft/protocol"
)

// The route cache. Every topic's GET_ROUTEINFO_BY_TOPIC answer is encoded once and handed to every client
// that asks, until something it shows changes; it needs no lock while it is current.
//
// What an answer depends on carries a version: the topic's entry (its queue data, bumped by registrations
// that change them, permission changes, deletions), every broker name it lists (its addresses, their
// filter servers, its Raft stand-in: bumped by registrations that change them, unregistrations, expiry,
// closed connections), and the manager's generation (bumped by a change of raftMasterHoldMillis). A writer
// bumps the versions it touches while it holds the write lock: marking stale is O(1) per topic or broker
// name changed, and a registration that changes nothing (the 30 s re-registration of a fleet) bumps none.
// An answer records the versions it was built from, read under the read lock together with the tables;
// a reader compares them with the current ones (atomic loads), and rebuilds when one moved: the answer is
// written from the tables under the read lock into one buffer (routejson.go: about 1 us for a topic on two
// broker names, 50 us on a hundred), one rebuild per topic at a time (later readers wait for it and take
// its answer). A Raft stand-in ends by itself when its hold runs out: an
// answer that shows one is current only until then.
//
// The encoding is encoding/json's of protocol.TopicRouteData, byte for byte what the name server answered
// before the cache (TestRouteCacheMatchesEncoder checks it over random churn against PickupTopicRouteData
// encoded by encoding/json). orderTopicConf, when the
// KV table has one for the topic, is spliced in front as encoding/json would put it (its first field).
//
// GET_BROKER_CLUSTER_INFO, GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_TOPICS_BY_CLUSTER and
// GET_SYSTEM_TOPIC_LIST_FROM_NS, which tools and proxies poll, are cached the same way under two
// manager-wide versions: clusterVer (broker names, addresses, clusters) and listVer (that, and which
// broker names hold which topics).

// routeSlot is a topic's cached answer.
type routeSlot struct {
	build sync.Mutex // held while the answer is rebuilt: one rebuild per topic at a time
	cur   atomic.Pointer[routeAnswer]
}

// routeAnswer is one encoded route and what it was built from.
type routeAnswer struct {
	topicVer uint64
	gen      uint64
	brokers  []*brokerEntry // the broker names it lists
	vers     []uint64       // their versions when it was built
	until    int64          // unix ns after which a Raft stand-in it shows ends; 0: none
	body     []byte         // the TopicRouteData JSON; nil: the topic has no route (TOPIC_NOT_EXIST)
}

// current reports whether the answer still shows what the tables hold for e.
func (a *routeAnswer) current(m *RouteInfoManager, e *topicEntry) bool {
	if a == nil || a.topicVer != e.ver.Load() || a.gen != m.gen.Load() {
		return false
	}
	for i, bd := range a.brokers {
		if bd.ver.Load() != a.vers[i] {
			return false
		}
	}
	return a.until == 0 || m.now().UnixNano() <= a.until
}

// RouteAnswer is the topic's route encoded as GET_ROUTEINFO_BY_TOPIC answers it (the JSON of
// PickupTopicRouteData's route), or ok false when the topic has no route. The returned bytes are shared
// with every other caller: never modify them.
func (m *RouteInfoManager) RouteAnswer(topic string) (body []byte, ok bool) {
	v, found := m.routes.Load(topic)
	if !found {
		return nil, false
	}
	e := v.(*topicEntry)
	if a := e.cache.cur.Load(); a.current(m, e) {
		return a.body, a.body != nil
	}
	e.cache.build.Lock()
	defer e.cache.build.Unlock()
	if a := e.cache.cur.Load(); a.current(m, e) { // rebuilt while we waited
		return a.body, a.body != nil
	}
	m.rebuilds.Add(1)
	a := &routeAnswer{}
	m.mu.RLock()
	body, ok, until := m.appendRouteLocked(make([]byte, 0, routeAnswerSizeLocked(e)), e, a) // routejson.go
	m.mu.RUnlock()
	if !until.IsZero() {
		a.until = until.UnixNano()
	}
	if ok {
		a.body = body
	}
	e.cache.cur.Store(a)
	return a.body, ok
}

// TopicName returns the route table's string equal to topic, when it holds the topic: the strings of route
// queries' headers come from it (remoting.Interner).
func (m *RouteInfoManager) TopicName(topic string) (string, bool) {
	if v, ok := m.routes.Load(topic); ok {
		return v.(*topicEntry).name, true
	}
	return "", false
}

// CachedRouteAnswer is RouteAnswer when the cached answer is current, without waiting for anything;
// current is false when it would have to be rebuilt (the caller then asks RouteAnswer, off the hot path).
func (m *RouteInfoManager) CachedRouteAnswer(topic string) (body []byte, ok, current bool) {
	v, found := m.routes.Load(topic)
	if !found {
		return nil, false, true
	}
	e := v.(*topicEntry)
	if a := e.cache.cur.Load(); a.current(m, e) {
		return a.body, a.body != nil, true
	}
	return nil, false, false
}

// RouteRebuilds is how many times a route answer was built: once per topic asked for, and again after each
// change that touched it (the rest of GET_ROUTEINFO_BY_TOPIC's answers came from the cache).
func (m *RouteInfoManager) RouteRebuilds() uint64 { return m.rebuilds.Load() }

// WithOrderTopicConf returns a route body with orderTopicConf conf, as encoding/json encodes a
// TopicRouteData whose OrderTopicConf is set: the field comes first.
func WithOrderTopicConf(body []byte, conf string) []byte {
	if conf == "" || len(body) < 2 {
		return body
	}
	field, _ := json.Marshal(struct {
		OrderTopicConf string `json:"orderTopicConf"`
	}{conf})
	out := make([]byte, 0, len(body)+len(field))
	out = append(out, field[:len(field)-1]...) // {"orderTopicConf":"..."
	out = append(out, ',')
	return append(out, body[1:]...)
}

// listCache holds the cached answers of the cluster and topic-list requests.
type listCache struct {
	mu      sync.Mutex
	answers map[string]listAnswer // by request ("cluster", "all", "system", "by:<cluster>")
}

type listAnswer struct {
	ver  uint64
	body []byte
}

// cachedList returns the cached answer under key while ver (read by version) has not moved, else builds
// it: build runs under the read lock and returns the value to encode.
func (m *RouteInfoManager) cachedList(key string, version func() uint64, build func() any) []byte {
	ver := version()
	m.lists.mu.Lock()
	if a, ok := m.lists.answers[key]; ok && a.ver == ver {
		m.lists.mu.Unlock()
		return a.body
	}
	m.lists.mu.Unlock()
	m.mu.RLock()
	ver = version() // stable while the read lock is held
	v := build()
	m.mu.RUnlock()
	body, err := json.Marshal(v)
	if err != nil { // cannot fail: strings and maps of them
		m.logger.Error("namesrv: encode an answer", "request", key, "err", err)
		return nil
	}
	m.lists.mu.Lock()
	if m.lists.answers == nil {
		m.lists.answers = make(map[string]listAnswer)
	}
	if len(m.lists.answers) > maxCachedLists {
		clear(m.lists.answers) // GET_TOPICS_BY_CLUSTER of many cluster names: start over
	}
	m.lists.answers[key] = listAnswer{ver: ver, body: body}
	m.lists.mu.Unlock()
	return body
}

// maxCachedLists bounds the list answers kept (one per cluster name asked for, and four more).
const maxCachedLists = 1024

// ClusterInfoAnswer is GET_BROKER_CLUSTER_INFO's body (ClusterInfo's JSON), from the cache.
func (m *RouteInfoManager) ClusterInfoAnswer() []byte {
	return m.cachedList("cluster", m.clusterVer.Load, func() any { return m.clusterInfoLocked() })
}

// AllTopicsAnswer is GET_ALL_TOPIC_LIST_FROM_NAMESERVER's body (a TopicList of AllTopics), from the cache.
func (m *RouteInfoManager) AllTopicsAnswer() []byte {
	return m.cachedList("all", m.listVer.Load, func() any {
		return protocol.TopicList{TopicList: m.sortedTopicsLocked()}
	})
}

// TopicsByClusterAnswer is GET_TOPICS_BY_CLUSTER's body (a TopicList of TopicsByCluster), from the cache.
func (m *RouteInfoManager) TopicsByClusterAnswer(cluster string) []byte {
	return m.cachedList("by:"+cluster, m.listVer.Load, func() any {
		return protocol.TopicList{TopicList: m.topicsByClusterLocked(cluster)}
	})
}

// SystemTopicsAnswer is GET_SYSTEM_TOPIC_LIST_FROM_NS's body (SystemTopics' JSON), from the cache.
func (m *RouteInfoManager) SystemTopicsAnswer() []byte {
	return m.cachedList("system", m.clusterVer.Load, func() any { return m.systemTopicsLocked() })
}

func (m *RouteInfoManager) sortedTopicsLocked() []string {
	return slices.Sorted(maps.Keys(m.topicQueue))
}
