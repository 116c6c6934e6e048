package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
)

// The fleet simulator (mqbench namesrv) drives name servers as a large deployment does: N broker groups
// of R brokers each registering their topic tables every period on their own connections, and M client
// connections asking GET_ROUTEINFO_BY_TOPIC for random topics, open loop at a set rate, latency counted
// from when each query was due. fleet.go holds the shape of the fleet and what every broker sends;
// fleet_brokers.go the registrations and the churn, fleet_queries.go the query load, fleet_standin.go the
// stand-in that answers at once (the simulator's own floor), fleet_run.go the phases and the summary.

// Body kinds of REGISTER_BROKER, as Java brokers send them.
const (
	BodyPlain      = "plain"      // RegisterBrokerBody JSON
	BodyCompressed = "compressed" // compressRegister=true: the zlib form
	BodySplit      = "split"      // enableSplitRegistration: plain JSON chunks of SplitSize topics, one data version
)

// Churn events of the measured phase.
const (
	ChurnTopicCreate  = "topic-create"    // a group creates a topic and registers at once, as Java brokers do
	ChurnMasterChange = "master-change"   // a group's master leaves (its connection closes), its first slave registers as master
	ChurnBrokerKill   = "broker-kill"     // a slave's connection is cut; it registers again a period later
	ChurnReconnect    = "reconnect-storm" // every client connection closes and reconnects within a second
	ChurnRestart      = "restart"         // the started name server is killed and started again (--start only)
)

var churnKinds = []string{ChurnTopicCreate, ChurnMasterChange, ChurnBrokerKill, ChurnReconnect, ChurnRestart}

// FleetConfig configures `mqbench namesrv`. Every field names its flag.
type FleetConfig struct {
	NamesrvAddrs []string // -n: name servers to drive (without --start)
	// Start (--start) is a name server binary (mqnamesrv) the simulator runs itself on 127.0.0.1, pinned to
	// CPU with taskset when CPU is set, with metrics on for its CPU, memory and allocations.
	Start       string
	StartArgs   []string // --start-arg (repeatable): more --key=value for the started name server
	CPU         string   // --cpu: taskset CPU list for the started name server and the stand-in ("": not pinned)
	MetricsAddr []string // --ns-metrics: metrics endpoints (host:port) of the -n name servers, in order
	CPUProfile  string   // --ns-cpuprofile: the started name server writes its CPU profile here

	Groups   int           // --groups: broker groups
	Replicas int           // --replicas: brokers per group (a master and Replicas-1 slaves)
	Topics   int           // --topics: topics per group
	Spread   int           // --spread: groups per topic (2: narrow; Groups or 0: every topic on every group)
	Queues   int           // --queues: read and write queues per topic
	Bodies   []string      // --bodies: plain, compressed, split: group g sends Bodies[g % len]
	Split    int           // --split-size: topics per chunk of a split registration (Java's splitRegistrationSize)
	Every    time.Duration // --register-every: registration period of every broker
	Burst    bool          // --register-burst: every broker registers at the same moment of each period (else spread)
	// Heartbeat (--heartbeat) is RocketMQ 5's BROKER_HEARTBEAT period (0: none); brokers then register with
	// heartbeatTimeoutMillis HeartbeatTimeout (--heartbeat-timeout), as with enableSlaveActingMaster.
	Heartbeat        time.Duration
	HeartbeatTimeout time.Duration

	Clients  int           // --clients: client connections asking routes
	Rate     float64       // --rate: route queries per second over all of them
	Duration time.Duration // --duration: the measured phase
	Floor    time.Duration // --floor: the same load against the stand-in first (0: no floor)
	Warmup   time.Duration // --warmup: load before the measured phase starts counting
	Timeout  time.Duration // --timeout: a query not answered within this counts as lost
	Check    int           // --check: check the groups of one answer in Check (1: every answer)
	Churn    []string      // --churn: events of the measured phase
	// IdleConns (--idle-conns) opens this many more connections after the measured phase, each asking one
	// route and then idle, to measure the name server's memory per idle connection.
	IdleConns int
	Interval  time.Duration // --interval: report period
	Cluster   string        // --cluster: the brokers' cluster name
}

// DefaultFleetConfig is the fleet: 100 groups of 3 brokers with 1,000 topics each, every topic on 2
// groups, registering every 30 s at once; 1,000 connections asking 17,000 routes a second.
func DefaultFleetConfig() FleetConfig {
	return FleetConfig{
		Groups: 100, Replicas: 3, Topics: 1000, Spread: 2, Queues: 8,
		Bodies: []string{BodyPlain, BodyCompressed, BodySplit}, Split: 800,
		Every: 30 * time.Second, Burst: true, HeartbeatTimeout: 10 * time.Second,
		Clients: 1000, Rate: 17000, Duration: 60 * time.Second, Floor: 30 * time.Second, Warmup: 5 * time.Second,
		Timeout: 6 * time.Second, Check: 1, Interval: 5 * time.Second, Cluster: "FleetCluster",
	}
}

// Validate names the flag that is out of range.
func (c *FleetConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Start == "" && len(c.NamesrvAddrs) == 0 {
		bad("-n or --start: give the name servers to drive, or a name server binary to start")
	}
	if c.Start != "" && len(c.NamesrvAddrs) > 0 {
		bad("-n %s with --start %s: one or the other", strings.Join(c.NamesrvAddrs, ";"), c.Start)
	}
	if len(c.MetricsAddr) > 0 && len(c.MetricsAddr) != len(c.NamesrvAddrs) {
		bad("--ns-metrics: %d endpoints for %d name servers", len(c.MetricsAddr), len(c.NamesrvAddrs))
	}
	if c.Groups < 1 || c.Groups > 10_000 {
		bad("--groups %d: must be 1 to 10000", c.Groups)
	}
	if c.Replicas < 1 || c.Replicas > 16 {
		bad("--replicas %d: must be 1 to 16", c.Replicas)
	}
	if c.Topics < 1 || c.Topics > 100_000 {
		bad("--topics %d: must be 1 to 100000", c.Topics)
	}
	if c.Spread == 0 {
		c.Spread = c.Groups
	}
	if c.Spread < 1 || c.Spread > c.Groups || c.Groups%c.Spread != 0 {
		bad("--spread %d: must divide --groups %d (0: every group)", c.Spread, c.Groups)
	}
	if c.Queues < 1 || c.Queues > 1024 {
		bad("--queues %d: must be 1 to 1024", c.Queues)
	}
	if len(c.Bodies) == 0 {
		bad("--bodies: give at least one of plain, compressed, split")
	}
	for _, b := range c.Bodies {
		if b != BodyPlain && b != BodyCompressed && b != BodySplit {
			bad("--bodies %q: each must be plain, compressed or split", b)
		}
	}
	if c.Split < 1 {
		bad("--split-size %d: must be above 0", c.Split)
	}
	if c.Every < 100*time.Millisecond {
		bad("--register-every %v: must be at least 100ms", c.Every)
	}
	if c.Heartbeat < 0 || (c.Heartbeat > 0 && c.HeartbeatTimeout <= c.Heartbeat) {
		bad("--heartbeat %v with --heartbeat-timeout %v: the timeout must exceed the period", c.Heartbeat, c.HeartbeatTimeout)
	}
	if c.Clients < 1 || c.Clients > 100_000 {
		bad("--clients %d: must be 1 to 100000", c.Clients)
	}
	if c.Rate <= 0 || c.Rate > 1e6 {
		bad("--rate %g: must be above 0 and at most 1000000 queries/s", c.Rate)
	}
	if c.Duration <= 0 {
		bad("--duration %v: must be above 0", c.Duration)
	}
	if c.Floor < 0 || c.Warmup < 0 {
		bad("--floor %v, --warmup %v: must not be negative", c.Floor, c.Warmup)
	}
	if c.Timeout <= 0 {
		bad("--timeout %v: must be above 0", c.Timeout)
	}
	if c.Check < 1 {
		bad("--check %d: must be at least 1 (every answer)", c.Check)
	}
	for _, k := range c.Churn {
		if !slices.Contains(churnKinds, k) {
			bad("--churn %q: each must be one of %s", k, strings.Join(churnKinds, ", "))
		}
		if k == ChurnRestart && c.Start == "" {
			bad("--churn restart: needs --start (the simulator restarts the name server it started)")
		}
	}
	if c.IdleConns < 0 {
		bad("--idle-conns %d: must not be negative", c.IdleConns)
	}
	if c.Interval <= 0 {
		bad("--interval %v: must be above 0", c.Interval)
	}
	if c.Cluster == "" {
		bad("--cluster: must not be empty")
	}
	return errors.Join(errs...)
}

func (c *FleetConfig) churns(kind string) bool { return slices.Contains(c.Churn, kind) }

// fleet is the model of the simulated deployment: which groups hold which topics, and what every broker
// registers. It is built once; churn changes what groups hold under the brokers' own locks.
type fleet struct {
	cfg    FleetConfig
	groups []*group
	topics []string // every topic, in a fixed order; clients pick among them
	// topicSet[i] is the index of the set of groups holding topics[i]: groups set*Spread .. set*Spread+Spread-1.
	topicSet []int

	// mu guards what churn changes in the groups (masterIdx, topics, counter) and regs.
	mu   sync.Mutex
	regs map[*group]registration // each group's encoded registration, until its table or version changes
}

// group is one broker group (a broker name): a master and its slaves.
type group struct {
	index   int
	name    string
	addrs   []string // by broker index: the address each registers
	haAddrs []string // by broker index: its HA address
	topics  []string // its topic table
	kind    string   // body kind
	counter int64    // data version counter; bumped by topic creation
	// masterIdx is the broker currently registered as master (brokerId 0); the others register as slaves.
	masterIdx int
}

func newFleet(cfg FleetConfig) *fleet {
	f := &fleet{cfg: cfg, regs: make(map[*group]registration)}
	sets := cfg.Groups / cfg.Spread
	for s := 0; s < sets; s++ {
		for j := 0; j < cfg.Topics; j++ {
			f.topics = append(f.topics, fleetTopic(s, j))
			f.topicSet = append(f.topicSet, s)
		}
	}
	for g := 0; g < cfg.Groups; g++ {
		gr := &group{index: g, name: fmt.Sprintf("fleet-%04d", g), kind: cfg.Bodies[g%len(cfg.Bodies)], counter: 1}
		for r := 0; r < cfg.Replicas; r++ {
			host := fmt.Sprintf("10.%d.%d.%d", 1+g/65536, g/256%256, g%256)
			gr.addrs = append(gr.addrs, host+":"+strconv.Itoa(10911+10*r))
			gr.haAddrs = append(gr.haAddrs, host+":"+strconv.Itoa(10912+10*r))
		}
		s := g / cfg.Spread
		gr.topics = f.topics[s*cfg.Topics : (s+1)*cfg.Topics : (s+1)*cfg.Topics]
		f.groups = append(f.groups, gr)
	}
	return f
}

func fleetTopic(set, j int) string { return "Fleet" + strconv.Itoa(set) + "_" + strconv.Itoa(j) }

// groupsOf is the groups holding the topic of set s.
func (f *fleet) groupsOf(set int) []*group {
	return f.groups[set*f.cfg.Spread : (set+1)*f.cfg.Spread]
}

// expectedRoute is the route a complete answer holds for topics of set s (every group, every live
// address): what the stand-in answers, in the name server's encoding.
func (f *fleet) expectedRoute(set int) protocol.TopicRouteData {
	var rd protocol.TopicRouteData
	rd.FilterServerTable = map[string][]string{}
	for _, g := range f.groupsOf(set) {
		rd.QueueDatas = append(rd.QueueDatas, protocol.QueueData{BrokerName: g.name, ReadQueueNums: int32(f.cfg.Queues),
			WriteQueueNums: int32(f.cfg.Queues), Perm: protocol.PermRead | protocol.PermWrite})
		bd := protocol.BrokerData{Cluster: f.cfg.Cluster, BrokerName: g.name, BrokerAddrs: map[int64]string{}}
		for r, a := range g.addrs {
			bd.BrokerAddrs[int64(r)] = a
		}
		rd.BrokerDatas = append(rd.BrokerDatas, bd)
	}
	return rd
}

// registration is what one broker sends in one registration: one body, or the chunks of a split one.
type registration struct {
	bodies     [][]byte
	compressed bool
}

// topicConfig is a topic's config as a Java broker registers it.
func (f *fleet) topicConfig(name string) *protocol.TopicConfig {
	return &protocol.TopicConfig{TopicName: name, ReadQueueNums: int32(f.cfg.Queues), WriteQueueNums: int32(f.cfg.Queues),
		Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: "SINGLE_TAG", Attributes: map[string]string{}}
}

// encode builds group g's registration body (or chunks) for its current topics and data version.
// Caller holds whatever guards g.
func (f *fleet) encode(g *group, epoch int64) (registration, error) {
	dv := protocol.DataVersion{Timestamp: epoch, Counter: g.counter}
	chunk := func(topics []string) protocol.RegisterBrokerBody {
		table := make(map[string]*protocol.TopicConfig, len(topics))
		for _, t := range topics {
			table[t] = f.topicConfig(t)
		}
		return protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
			TopicConfigTable: table, DataVersion: dv}, FilterServerList: []string{}}
	}
	switch g.kind {
	case BodyCompressed:
		b, err := protocol.EncodeRegisterBrokerBodyCompressed(chunk(g.topics))
		return registration{bodies: [][]byte{b}, compressed: true}, err
	case BodySplit:
		// As BrokerController.registerBrokerAll with enableSplitRegistration: a chunk each time the table
		// reaches SplitSize topics, then the rest (possibly none), all with the broker's one data version.
		var reg registration
		for start := 0; ; start += f.cfg.Split {
			end := min(start+f.cfg.Split, len(g.topics))
			b, err := json.Marshal(chunk(g.topics[start:end]))
			if err != nil {
				return reg, err
			}
			reg.bodies = append(reg.bodies, b)
			if end-start < f.cfg.Split {
				return reg, nil
			}
		}
	default:
		b, err := json.Marshal(chunk(g.topics))
		return registration{bodies: [][]byte{b}}, err
	}
}

// bodyCRC is REGISTER_BROKER's bodyCrc32: CRC32 of the body masked with 0x7FFFFFFF (UtilAll.crc32).
func bodyCRC(b []byte) string { return strconv.FormatInt(int64(crc32.ChecksumIEEE(b)&0x7FFFFFFF), 10) }
