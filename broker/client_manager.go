package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/filter"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// clientChannel is one client instance on one connection.
type clientChannel struct {
	conn       *remoting.Conn
	clientID   string
	language   string
	version    int32
	lastUpdate time.Time
}

// consumerGroupInfo is the live state of one consumer group on this broker.
type consumerGroupInfo struct {
	name             string
	consumeType      string
	messageModel     string
	consumeFromWhere string
	channels         map[uint64]*clientChannel    // by connection id
	subscriptions    map[string]*subscriptionInfo // by topic
	lastUpdate       time.Time
}

// subscriptionInfo is a compiled subscription: the tag codes used to filter at the ConsumeQueue, or the
// compiled SQL92 expression (or why it does not compile).
type subscriptionInfo struct {
	data   protocol.SubscriptionData
	all    bool           // "*" or empty
	codes  map[int64]bool // tag hash codes
	tags   map[string]bool
	sql    *filter.Expression
	sqlErr error
}

// expressionSQL92 is the expressionType of an SQL92 subscription.
const expressionSQL92 = "SQL92"

// clientManager tracks producer and consumer clients by connection (ProducerManager and ConsumerManager).
// Lock order: none; it never calls out while holding mu (notifications are sent after unlocking).
type clientManager struct {
	log *slog.Logger
	mu  sync.RWMutex
	// guarded by mu:
	consumers map[string]*consumerGroupInfo        // by group
	producers map[string]map[uint64]*clientChannel // group -> connection id -> channel
	byClient  map[string]*clientChannel            // clientID -> most recent channel (request-reply)
}

func newClientManager(log *slog.Logger) *clientManager {
	return &clientManager{
		log:       log,
		consumers: map[string]*consumerGroupInfo{},
		producers: map[string]map[uint64]*clientChannel{},
		byClient:  map[string]*clientChannel{},
	}
}

func compileSubscription(sd *protocol.SubscriptionData) *subscriptionInfo {
	si := &subscriptionInfo{data: *sd, codes: map[int64]bool{}, tags: map[string]bool{}}
	switch sd.ExpressionType {
	case "", "TAG":
	case expressionSQL92:
		si.sql, si.sqlErr = filter.Compile(sd.SubString)
		return si
	default:
		si.sqlErr = fmt.Errorf("unknown expression type %q (TAG or SQL92)", sd.ExpressionType)
		return si
	}
	if sd.SubString == "" || sd.SubString == "*" {
		si.all = true
		return si
	}
	for _, t := range protocol.SplitTags(sd.SubString) {
		si.tags[t] = true
		si.codes[tagsHash(t)] = true
	}
	return si
}

// heartbeat registers the client's groups on conn. It returns the consumer groups whose membership
// changed, so the caller can notify their members.
func (m *clientManager) heartbeat(conn *remoting.Conn, hb *protocol.HeartbeatData, language string, version int32) (changed []string) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := &clientChannel{conn: conn, clientID: hb.ClientID, language: language, version: version, lastUpdate: now}
	if hb.ClientID != "" {
		m.byClient[hb.ClientID] = ch
	}
	for _, pd := range hb.ProducerDataSet {
		if pd == nil || pd.GroupName == "" {
			continue
		}
		g := m.producers[pd.GroupName]
		if g == nil {
			g = map[uint64]*clientChannel{}
			m.producers[pd.GroupName] = g
		}
		g[conn.ID()] = ch
	}
	for _, cd := range hb.ConsumerDataSet {
		if cd == nil || cd.GroupName == "" {
			continue
		}
		g := m.consumers[cd.GroupName]
		if g == nil {
			g = &consumerGroupInfo{name: cd.GroupName, channels: map[uint64]*clientChannel{}, subscriptions: map[string]*subscriptionInfo{}}
			m.consumers[cd.GroupName] = g
		}
		g.consumeType, g.messageModel, g.consumeFromWhere, g.lastUpdate = cd.ConsumeType, cd.MessageModel, cd.ConsumeFromWhere, now
		old, ok := g.channels[conn.ID()]
		if !ok || old.clientID != hb.ClientID {
			changed = append(changed, cd.GroupName)
		}
		g.channels[conn.ID()] = ch
		// The newest heartbeat's subscriptions win (RocketMQ's updateSubscription keeps newer subVersions).
		for _, sd := range cd.SubscriptionDataSet {
			if sd == nil || sd.Topic == "" {
				continue
			}
			cur, ok := g.subscriptions[sd.Topic]
			if ok && cur.data.SubString == sd.SubString && cur.data.ExpressionType == sd.ExpressionType {
				continue // unchanged: keep the compiled form
			}
			if ok && cur.data.SubVersion > sd.SubVersion {
				continue
			}
			g.subscriptions[sd.Topic] = compileSubscription(sd)
		}
	}
	return changed
}

// unregister removes a client (by id, or every client of conn when clientID is "") from the named groups
// (all groups when both are ""). It returns the consumer groups whose membership changed and the client
// ids that no longer have any connection here.
func (m *clientManager) unregister(conn *remoting.Conn, clientID string, producerGroup, consumerGroup string) (changed, gone []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	matches := func(ch *clientChannel) bool {
		return ch.conn.ID() == conn.ID() && (clientID == "" || ch.clientID == clientID)
	}
	for name, g := range m.producers {
		if producerGroup != "" && name != producerGroup {
			continue
		}
		for id, ch := range g {
			if matches(ch) {
				delete(g, id)
			}
		}
		if len(g) == 0 {
			delete(m.producers, name)
		}
	}
	for name, g := range m.consumers {
		if consumerGroup != "" && name != consumerGroup {
			continue
		}
		for id, ch := range g.channels {
			if matches(ch) {
				delete(g.channels, id)
				changed = append(changed, name)
			}
		}
		if len(g.channels) == 0 {
			delete(m.consumers, name)
		}
	}
	for id, ch := range m.byClient {
		if matches(ch) {
			delete(m.byClient, id)
			if !m.hasClientLocked(id) {
				gone = append(gone, id)
			}
		}
	}
	return changed, gone
}

// hasClientLocked reports whether clientID is still registered on any connection. mu must be held.
func (m *clientManager) hasClientLocked(clientID string) bool {
	for _, g := range m.consumers {
		for _, ch := range g.channels {
			if ch.clientID == clientID {
				return true
			}
		}
	}
	return false
}

// connClosed forgets everything registered on conn.
func (m *clientManager) connClosed(conn *remoting.Conn) (changed, gone []string) {
	return m.unregister(conn, "", "", "")
}

// expired returns connections whose last heartbeat is older than timeout.
func (m *clientManager) expired(timeout time.Duration) []*remoting.Conn {
	cutoff := time.Now().Add(-timeout)
	m.mu.RLock()
	defer m.mu.RUnlock()
	seen := map[uint64]*remoting.Conn{}
	visit := func(ch *clientChannel) {
		if ch.lastUpdate.Before(cutoff) {
			seen[ch.conn.ID()] = ch.conn
		}
	}
	for _, g := range m.producers {
		for _, ch := range g {
			visit(ch)
		}
	}
	for _, g := range m.consumers {
		for _, ch := range g.channels {
			visit(ch)
		}
	}
	out := make([]*remoting.Conn, 0, len(seen))
	for _, c := range seen {
		out = append(out, c)
	}
	return out
}

// consumerIDs lists the live client ids of a group, sorted.
func (m *clientManager) consumerIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	set := map[string]bool{}
	for _, ch := range g.channels {
		set[ch.clientID] = true
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// consumerConns lists one connection per member of a group.
func (m *clientManager) consumerConns(group string) []*remoting.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return nil
	}
	out := make([]*remoting.Conn, 0, len(g.channels))
	for _, ch := range g.channels {
		out = append(out, ch.conn)
	}
	return out
}

// subscription returns the group's compiled subscription of topic, or nil.
func (m *clientManager) subscription(group, topic string) *subscriptionInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g := m.consumers[group]; g != nil {
		return g.subscriptions[topic]
	}
	return nil
}

// groupInfo returns a copy of the group's model fields (empty when unknown).
func (m *clientManager) groupModel(group string) (messageModel string, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g := m.consumers[group]
	if g == nil {
		return "", false
	}
	return g.messageModel, true
}

// producerConn returns a live connection of the producer group (transaction checks), or nil.
func (m *clientManager) producerConns(group string) []*remoting.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*remoting.Conn
	for _, ch := range m.producers[group] {
		out = append(out, ch.conn)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID() < out[j].ID() })
	return out
}

// clientConn returns the connection of a client id (request-reply), or nil.
func (m *clientManager) clientConn(clientID string) *remoting.Conn {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if ch := m.byClient[clientID]; ch != nil {
		return ch.conn
	}
	return nil
}

// rememberClient records which connection a client id uses (a request message names its REPLY_TO_CLIENT
// before the requester's first heartbeat may have arrived).
func (m *clientManager) rememberClient(clientID string, conn *remoting.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch, ok := m.byClient[clientID]; ok && ch.conn.ID() == conn.ID() {
		return
	}
	m.byClient[clientID] = &clientChannel{conn: conn, clientID: clientID, lastUpdate: time.Now()}
}

// notifyConsumerIDsChanged tells every member of each group that membership changed (oneway, as RocketMQ).
func (m *clientManager) notifyConsumerIDsChanged(groups []string) {
	for _, g := range dedupe(groups) {
		for _, c := range m.consumerConns(g) {
			req := remoting.NewRequest(remoting.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": g}, nil)
			req.MarkOneway()
			if err := c.SendOneway(req); err != nil {
				m.log.Debug("notify consumer ids changed", "group", g, "client", c.RemoteAddr(), "err", err)
			}
		}
	}
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func decodeHeartbeat(body []byte) (*protocol.HeartbeatData, error) {
	var hb protocol.HeartbeatData
	if err := json.Unmarshal(body, &hb); err != nil {
		return nil, err
	}
	return &hb, nil
}
