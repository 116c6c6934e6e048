package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/broker/internal/delay"
	"github.com/rocketraft/rocketraft/broker/internal/pop"
	"github.com/rocketraft/rocketraft/broker/internal/stats"
	"github.com/rocketraft/rocketraft/broker/internal/txcheck"
	"github.com/rocketraft/rocketraft/internal/conf"
	"github.com/rocketraft/rocketraft/internal/loop"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// Options are the things a broker needs that are not config keys.
type Options struct {
	Logger *slog.Logger // nil = slog.Default()
	// SetLogLevel, when set, applies a logLevel that UPDATE_BROKER_CONFIG accepted to the process's logging
	// (mqbroker passes logging.Logs.SetLevel). Without it the key is still accepted and shown, and changes
	// nothing else.
	SetLogLevel func(level string) error
	// StatsLogInterval is how often stats.log lines are written (0 = every minute, as RocketMQ).
	StatsLogInterval time.Duration
	// Clock is the clock of the time-driven services (clock.go); nil is the system's.
	Clock Clock
	// SyncObserver is passed to the store (store.Options.SyncObserver): mqbroker sets it to a
	// power-loss journal (internal/powerloss) when the chaos suite asks; nil otherwise.
	SyncObserver store.SyncObserver
	// FileOps is passed to the store (store.Options.FileOps): tests inject disk faults through it; nil
	// is the system calls.
	FileOps store.FileOps
}

// Broker is one RocketMQ broker: a message store, the request processors, and the services around them.
type Broker struct {
	cfg       Config
	log       *slog.Logger
	clock     *steadyClock // the time-driven services' clock (clock.go)
	addr      string       // brokerIP1:listenPort, what clients and name servers see
	haAddr    string       // brokerIP1:haListenPort
	storeHost netip.AddrPort

	store    *store.Store
	server   *remoting.Server
	nsClient *remoting.Client
	aclCheck *acl.Validator // nil unless aclEnable
	grpc     *grpcEndpoint  // nil unless enableProxy (grpc.go)

	topics   *topicConfigManager
	offsets  *consumerOffsetManager
	resets   pendingResets // admin resets a group's online consumers have not taken up yet (consumer_offset_reset.go)
	groups   *subscriptionGroupManager
	clients  *clientManager
	locks    *rebalanceLockManager
	pullHold *pullHoldService
	schedule *delay.Schedule  // delay-level delivery (broker/internal/delay), a master service
	timer    *delay.Timer     // timed delivery (broker/internal/delay), a master service
	txCheck  *txcheck.Checker // transaction check-back (broker/internal/txcheck), a master service
	pop      popEngine        // RocketMQ 5's pop consumption (broker/internal/pop), a master service
	popPoll  *popPollService  // held pops and notifications (pop_poll.go)
	uniqIDs  *message.UniqIDGenerator
	sqlCache sqlCache
	stats    *stats.Stats // what passes, counted (broker/internal/stats): admin figures, metrics, stats items
	metrics  *brokerMetrics
	admin    adminState // admin_*.go: live config, TPS samples
	opts     Options
	pools    []*remoting.Pool
	pullPool *remoting.Pool
	popPool  *remoting.Pool // held pops run again there (pop.go)

	delayLevels []time.Duration // messageDelayLevel, parsed

	// role is the replication role (role.go), chosen in New from the config and kept until Close.
	role replicationRole
	// raft is the role when it is the Raft mode's (enableDLegerCommitLog), for its own request handlers and
	// state machine (raft_*.go); nil in classic mode.
	raft     *raftRole
	putter   messagePutter  // where puts go: the role's (the store, or the Raft node; raft_put.go)
	services masterServices // delay, timer and transaction check-back: run while this broker is master

	// slaveMeta applies the master's metadata records on a classic slave (ha_meta_apply.go); nil otherwise.
	// Set by the role's open, before the store dispatches.
	slaveMeta *slaveMeta

	registerWake chan struct{}
	reg          registerState // register.go: rounds asked and finished
	stop         chan struct{}
	wg           sync.WaitGroup
	closeOnce    sync.Once
	closeErr     error

	mu           sync.Mutex
	masterAddr   string // guarded by mu: the master's client address (slaves), from the name server
	masterHAAddr string // guarded by mu
}

// New validates cfg, opens the message store (recovering it if needed) and wires the processors.
// Nothing listens until Start.
func New(cfg Config, opts Options) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	var clock Clock = newSystemClock()
	if opts.Clock != nil {
		clock = opts.Clock
	}
	ip, err := brokerIP(cfg.BrokerIP1)
	if err != nil {
		return nil, err
	}
	tlsMode, serverTLS, err := cfg.TLS.ServerTLS(log)
	if err != nil {
		return nil, err
	}
	clientTLS, err := cfg.TLS.ClientTLS()
	if err != nil {
		return nil, err
	}
	var aclCheck *acl.Validator
	if cfg.ACL.AclEnable {
		if aclCheck, err = acl.New(cfg.ACL.AclPath(), log.With("component", "acl")); err != nil {
			return nil, fmt.Errorf("config key aclFile: %w", err)
		}
	}
	b := &Broker{
		cfg:          cfg,
		clock:        newSteadyClock(clock),
		aclCheck:     aclCheck,
		log:          log.With("broker", cfg.BrokerName, "id", cfg.BrokerID),
		storeHost:    netip.AddrPortFrom(ip, uint16(cfg.ListenPort)),
		registerWake: make(chan struct{}, 1),
		stop:         make(chan struct{}),
		uniqIDs:      message.NewUniqIDGenerator(ip, [4]byte{}),
		stats:        stats.New(cfg.BrokerClusterName),
		opts:         opts,
	}
	b.addr = b.storeHost.String()
	b.delayLevels, _ = parseDelayLevels(cfg.MessageDelayLevel) // validated above
	b.haAddr = net.JoinHostPort(ip.String(), strconv.Itoa(cfg.haListenPort()))
	b.topics = newTopicConfigManager(&b.cfg, b.log)
	b.topics.onChange = b.topicsChanged
	b.offsets = newConsumerOffsetManager(&b.cfg, b.log)
	b.groups = newSubscriptionGroupManager(&b.cfg, b.log)
	b.clients = newClientManager(b.log)
	b.locks = newRebalanceLockManager(ms(cfg.RebalanceLockMaxLiveTime))
	// The master services read the store once started; New opens it below (openedStore).
	b.schedule = delay.NewSchedule(delay.ScheduleOptions{Store: openedStore{&b.store}, Put: b.put, Clock: b.clock, Log: b.log,
		Levels: b.delayLevels, Dir: cfg.StorePathRootDir, PersistEvery: ms(cfg.FlushDelayOffsetInterval)})
	b.timer = delay.NewTimer(delay.TimerOptions{Store: openedStore{&b.store}, Put: b.put, Clock: b.clock, Log: b.log,
		Dir: cfg.StorePathRootDir, PersistEvery: ms(cfg.FlushDelayOffsetInterval),
		OnDelivered: b.stats.RecordTimerOut})
	b.txCheck = txcheck.New(txcheck.Options{Store: openedStore{&b.store}, Put: b.putRaw, Offsets: engineOffsets{b.offsets},
		Producers: txProducers{b.clients}, Clock: b.clock, Log: b.log, StoreHost: b.storeHost,
		EnsureTopic: func(topic string, queues, perm int32) error {
			_, err := b.topics.createIfAbsent(topic, queues, perm, 0)
			return err
		},
		Interval: ms(cfg.TransactionCheckInterval), Timeout: ms(cfg.TransactionTimeOut), CheckMax: cfg.TransactionCheckMax})
	b.pop = popEngine{pop.New(b.popOptions())}
	b.popPoll = newPopPollService(cfg.Pop.PopPollingSize, cfg.Pop.MaxPopPollingSize, b.rerunHeldPop)
	b.services.list = []namedService{{"persist delay offsets", b.schedule}, {"persist timer checkpoint", b.timer},
		{"transaction check", b.txCheck}, {"pop revive", b.pop}}
	for _, load := range []func() error{b.topics.load, b.offsets.load, b.groups.load, b.schedule.Load, b.timer.Load} {
		if err := load(); err != nil {
			return nil, err
		}
	}
	b.pullHold = newPullHoldService(b.log, ms(cfg.PullHoldRecheckInterval), func(t string, q int32) int64 {
		return b.store.MaxOffsetInQueue(t, q)
	}, b.rerunPull)
	b.role = newReplicationRole(b)
	storeOpts := store.Options{
		Logger:           b.log,
		StoreHost:        b.storeHost,
		ArrivingListener: b.arrived,
		TagsCode:         delay.TagsCode(b.delayLevels),
		SyncObserver:     opts.SyncObserver,
		FileOps:          opts.FileOps,
	}
	b.role.storeOptions(&storeOpts)
	st, err := store.Open(cfg.Config, storeOpts)
	if err != nil {
		return nil, fmt.Errorf("broker: open store: %w", err)
	}
	b.store = st
	b.nsClient = remoting.NewClient(remoting.ClientConfig{DialTimeout: 3 * time.Second, TLS: clientTLS,
		Credentials: cfg.ACL.Credentials()}, b.log.With("component", "namesrv-client"))
	b.server = remoting.NewServer(remoting.ServerConfig{
		ListenAddr:  net.JoinHostPort(clientListenHost(cfg), strconv.Itoa(cfg.ListenPort)), // raft_vip.go
		IdleTimeout: ms(cfg.ChannelExpiredTimeout),
		TLSMode:     tlsMode,
		TLS:         serverTLS,
	}, b.log.With("component", "remoting"))
	b.registerProcessors()
	if aclCheck != nil {
		b.server.AddGuard("acl", aclCheck.Intercept)
	}
	b.metrics = newBrokerMetrics(b)
	if err := b.role.open(); err != nil {
		_ = b.store.Close()
		return nil, err
	}
	b.putter = b.role.putter()
	return b, nil
}

// listenHost is the address the broker binds: all interfaces unless brokerIP1 is loopback (tests).
func listenHost(ip1 string) string {
	if a, err := netip.ParseAddr(ip1); err == nil && a.IsLoopback() {
		return ip1
	}
	return ""
}

// brokerIP is brokerIP1, or the first non-loopback IPv4 address of the host (127.0.0.1 when it has none).
func brokerIP(ip1 string) (netip.Addr, error) {
	if ip1 != "" {
		a, err := netip.ParseAddr(ip1)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("config key brokerIP1: %q is not an IP address", ip1)
		}
		return a.Unmap(), nil
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
				ip, _ := netip.AddrFromSlice(n.IP.To4())
				return ip, nil
			}
		}
	}
	return netip.MustParseAddr("127.0.0.1"), nil
}

func (b *Broker) registerProcessors() {
	pool := func(name string, workers, queue int) *remoting.Pool {
		p := remoting.NewPool(name, workers, queue)
		b.pools = append(b.pools, p)
		return p
	}
	c := &b.cfg
	send := pool("send", c.SendMessageThreadPoolNums, c.SendThreadPoolQueueCapacity)
	pull := pool("pull", c.PullMessageThreadPoolNums, c.PullThreadPoolQueueCapacity)
	b.pullPool = pull
	popPool := pool("pop", c.PopMessageThreadPoolNums, c.PopThreadPoolQueueCapacity)
	b.popPool = popPool
	ackPool := pool("ack", c.AckMessageThreadPoolNums, c.AckThreadPoolQueueCapacity)
	query := pool("query", c.QueryMessageThreadPoolNums, 20_000)
	admin := pool("admin", c.AdminBrokerThreadPoolNums, 10_000)
	client := pool("client", c.ClientManageThreadPoolNums, 50_000)
	consumer := pool("consumer", c.ConsumerManageThreadPoolNums, 100_000)
	s := b.server
	s.RegisterInline(remoting.SendMessage, send, b.role.masterServed(b.processSend), b.sendInline)
	s.RegisterInline(remoting.SendMessageV2, send, b.role.masterServed(b.processSend), b.sendInline)
	s.RegisterInline(remoting.SendBatchMessage, send, b.role.masterServed(b.processSend), b.sendInline)
	s.Register(remoting.SendReplyMessage, send, b.role.masterServed(b.processSendReply))
	s.Register(remoting.SendReplyMessageV2, send, b.role.masterServed(b.processSendReply))
	s.Register(remoting.PullMessage, pull, b.processPull)
	s.Register(remoting.ConsumerSendMsgBack, send, b.role.masterServed(b.processConsumerSendMsgBack))
	s.Register(remoting.EndTransaction, send, b.role.masterServed(b.processEndTransaction))
	s.Register(remoting.RecallMessage, send, b.role.masterServed(b.processRecallMessage))
	// RocketMQ 5's pop family on pools of their own (as its popMessageExecutor and ackMessageExecutor): a pop or
	// an ack that writes a revive record never holds a pull worker.
	s.Register(remoting.PopMessage, popPool, b.role.masterServed(b.processPopMessage))
	s.Register(remoting.AckMessage, ackPool, b.role.masterServed(b.processAckMessage))
	s.Register(remoting.BatchAckMessage, ackPool, b.role.masterServed(b.processBatchAckMessage))
	s.Register(remoting.ChangeMessageInvisibleTime, ackPool, b.role.masterServed(b.processChangeInvisibleTime))
	s.Register(remoting.Notification, popPool, b.role.masterServed(b.processNotification))
	s.Register(remoting.PollingInfo, popPool, b.role.masterServed(b.processPollingInfo))
	s.Register(remoting.QueryMessage, query, b.processQueryMessage)
	s.Register(remoting.ViewMessageByID, query, b.processViewMessageByID)
	s.Register(remoting.HeartBeat, client, b.processHeartbeat)
	s.Register(remoting.UnregisterClient, client, b.processUnregisterClient)
	s.Register(remoting.GetConsumerListByGroup, consumer, b.processGetConsumerListByGroup)
	s.Register(remoting.QueryConsumerOffset, consumer, b.processQueryConsumerOffset)
	s.Register(remoting.UpdateConsumerOffset, consumer, b.role.masterServed(b.processUpdateConsumerOffset))
	s.Register(remoting.GetMaxOffset, consumer, b.processGetMaxOffset)
	s.Register(remoting.GetMinOffset, consumer, b.processGetMinOffset)
	s.Register(remoting.SearchOffsetByTimestamp, consumer, b.processSearchOffsetByTimestamp)
	s.Register(remoting.GetEarliestMsgStoreTime, consumer, b.processGetEarliestMsgStoreTime)
	s.Register(remoting.LockBatchMQ, consumer, b.processLockBatchMQ)
	s.Register(remoting.UnlockBatchMQ, consumer, b.processUnlockBatchMQ)
	s.Register(remoting.UpdateAndCreateTopic, admin, b.timedCreate(true, b.processUpdateAndCreateTopic))
	// mqadmin deleteTopic sends to every broker of the cluster, slaves too (RocketMQ's does): a classic slave
	// deletes its own copy, a Raft follower hands the request to the master, whose deletion goes through the log.
	s.Register(remoting.DeleteTopicInBroker, admin, b.role.masterServed(b.processDeleteTopic))
	s.Register(remoting.GetAllTopicConfig, admin, b.processGetAllTopicConfig)
	s.Register(remoting.GetAllSubscriptionGroupConfig, admin, b.processGetAllSubscriptionGroup)
	s.Register(remoting.GetAllConsumerOffset, admin, b.processGetAllConsumerOffset)
	s.Register(remoting.ViewBrokerStatsData, admin, b.processViewBrokerStatsData)
	s.Register(remoting.GetAllProducerInfo, admin, b.processGetAllProducerInfo)
	s.Register(remoting.GetAllDelayOffset, admin, b.processGetAllDelayOffset)
	s.Register(remoting.UpdateAndCreateSubscriptionGroup, admin, b.timedCreate(false, b.processUpdateSubscriptionGroup))
	s.Register(remoting.DeleteSubscriptionGroup, admin, b.processDeleteSubscriptionGroup)
	s.Register(remoting.GetBrokerConfig, admin, b.processGetBrokerConfig)
	s.Register(remoting.GetBrokerRuntimeInfo, admin, b.processGetBrokerRuntimeInfo)
	s.Register(remoting.UpdateBrokerConfig, admin, b.processUpdateBrokerConfig)
	s.Register(remoting.GetTopicStatsInfo, admin, b.processGetTopicStatsInfo)
	s.Register(remoting.GetConsumeStats, admin, b.processGetConsumeStats)
	s.Register(remoting.GetBrokerConsumeStats, admin, b.processGetBrokerConsumeStats)
	s.Register(remoting.DeleteExpiredCommitLog, admin, b.processDeleteExpiredCommitLog)
	s.Register(remoting.CleanExpiredConsumeQueue, admin, b.processCleanExpiredConsumeQueue)
	s.Register(remoting.CleanUnusedTopic, admin, b.processCleanUnusedTopic)
	s.Register(remoting.QueryConsumeQueue, query, b.processQueryConsumeQueue)
	s.Register(remoting.GetConsumerConnectionList, admin, b.processGetConsumerConnectionList)
	s.Register(remoting.GetProducerConnectionList, admin, b.processGetProducerConnectionList)
	s.Register(remoting.QueryTopicConsumeByWho, admin, b.processQueryTopicConsumeByWho)
	s.Register(remoting.InvokeBrokerToResetOffset, admin, b.processInvokeBrokerToResetOffset)
	s.Register(remoting.GetConsumerRunningInfo, admin, b.processGetConsumerRunningInfo)
	s.Register(remoting.ConsumeMessageDirectly, admin, b.processConsumeMessageDirectly)
	s.Register(remoting.UpdateAndCreateACLConfig, admin, b.processUpdateAndCreateACLConfig)
	s.Register(remoting.DeleteACLConfig, admin, b.processDeleteACLConfig)
	s.Register(remoting.UpdateGlobalWhiteAddrsConfig, admin, b.processUpdateGlobalWhiteAddrsConfig)
	s.Register(remoting.GetBrokerClusterACLInfo, admin, b.processGetBrokerClusterACLInfo)
	s.Register(remoting.GetBrokerClusterACLConfig, admin, b.processGetBrokerClusterACLConfig)
	s.OnConnClose(b.connClosed)
}

// arrived is the store's arrival listener (dispatch goroutine; must not block): it wakes held pulls and
// the delay and timer services, and on a classic slave applies the master's metadata records.
func (b *Broker) arrived(a store.Arrival) {
	switch a.Topic {
	case TopicSchedule:
		b.schedule.Arrived(a.QueueID, a.QueueOffset)
	case TopicTimer:
		b.timer.Arrived()
	case TopicHAMeta:
		if b.slaveMeta != nil {
			b.slaveMeta.arrived(a.QueueOffset)
		}
		return // a system topic no client reads
	}
	b.popPoll.arrived(a.Topic, a.QueueID)
	b.pullHold.arrived(a)
}

// rerunPull answers a held pull: it runs the pull again (without suspending) on the pull pool.
func (b *Broker) rerunPull(p *heldPull) {
	b.rerunOn(b.pullPool, p.conn, p.req, "held pull", func() *remoting.Command { return b.pull(p.conn, p.req, false) })
}

// rerunOn runs a held request again on pool (the pull pool, or the pop pool for a held pop) and replies with what run answers (nothing
// when run returns nil: held again). A request of a connection the client has closed is not run: a pull's
// messages would be counted as handed out (rocketmq_messages_out_total) and go nowhere. dropConn forgets
// such pulls too, but only once the connection's reader has seen the close; a message arriving first wakes
// them before that.
func (b *Broker) rerunOn(pool *remoting.Pool, conn *remoting.Conn, req *remoting.Command, what string, run func() *remoting.Command) {
	job := func() {
		select {
		case <-conn.Closed():
			return
		default:
		}
		resp := run()
		if resp == nil {
			return
		}
		if err := conn.Reply(req, resp); err != nil {
			if resp.Release != nil {
				resp.Release()
			}
			b.log.Debug("reply to "+what, "client", conn.RemoteAddr(), "err", err)
		}
	}
	if !pool.Submit(job) {
		_ = conn.Reply(req, errResponse(remoting.SystemBusy, "[REJECTREQUEST]system busy, the %s pool is full", pool.Name()))
	}
}

// Start starts the store's services, listens, registers with the name servers and starts the broker's
// own services. A Start that fails closes what it had started (Close), so a broker that could not start
// holds no port, file lock or goroutine.
func (b *Broker) Start() error {
	if err := b.start(); err != nil {
		_ = b.Close()
		return err
	}
	return nil
}

func (b *Broker) start() error {
	if err := b.store.Start(); err != nil {
		return fmt.Errorf("broker: start store: %w", err)
	}
	if b.aclCheck != nil {
		if err := b.aclCheck.Start(); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}
	// The TPS figures' and the consume rates' first samples are taken before the port serves: the
	// per-second sampler started below samples a second later, and what was stored in that second
	// would otherwise never show in putTps (the console's throughput plot of a new broker stayed at 0).
	now := time.Now()
	b.sampleTPS(now)
	b.admin.rates.sample(now, b.offsets.progress())
	if err := b.server.Start(); err != nil {
		return fmt.Errorf("broker: listen on port %d (listenPort): %w", b.cfg.ListenPort, err)
	}
	if err := b.metrics.start(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.pullHold.start()
	b.popPoll.start()
	if err := b.role.start(); err != nil { // and the master services on a classic master
		return fmt.Errorf("broker: start replication: %w", err)
	}
	b.wg.Add(1)
	go b.registerLoop()
	loop.Every(b.stop, &b.wg, ms(b.cfg.FlushConsumerOffsetInterval), b.persistOffsets)
	loop.Every(b.stop, &b.wg, ms(b.cfg.ClientHousekeepingInterval), b.closeSilentClients)
	loop.Every(b.stop, &b.wg, time.Second, b.sampleAdminStats)
	b.startStatsLog()
	var err error
	if b.grpc, err = startGrpc(b.cfg, b.aclCheck, grpcLocal{b}, b.log.With("component", "grpc")); err != nil {
		return err
	}
	b.log.Info("broker started", "addr", b.addr, "cluster", b.cfg.BrokerClusterName, "role", b.cfg.BrokerRole,
		"namesrv", b.cfg.NamesrvAddr, "store", b.cfg.StorePathRootDir, "flush", b.cfg.FlushDiskType)
	return nil
}

// Close shuts down in this order: the role's first step (in the Raft mode a master stops its services,
// proposes its last offsets and hands leadership over), then: unregister from the name servers (clients
// stop routing here), stop accepting connections, stop the services and answer the held pulls, run the
// requests already queued, flush the store (so SYNC_FLUSH sends are answered), stop replication (the
// role), persist consumer offsets, write what the connections still hold and close them, the role's last
// step, then close the store (final flush, abort file removed).
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		ctx, cancel := context.WithTimeout(context.Background(), ms(b.cfg.ShutdownTimeoutMillis))
		defer cancel()
		if err := b.grpc.close(); err != nil { // the v5 clients' calls end first: they go through this broker
			errs = append(errs, fmt.Errorf("close gRPC endpoint: %w", err))
		}
		b.role.beforeClose() // Raft mode: a master hands over while its pools still run
		b.unregisterAll(ctx)
		if err := b.server.StopAccepting(); err != nil {
			errs = append(errs, err)
		}
		if err := b.metrics.close(); err != nil { // no scrape reads the store once it is closed
			errs = append(errs, err)
		}
		close(b.stop)
		b.wg.Wait()
		if err := b.services.closeForGood(); err != nil {
			errs = append(errs, err)
		}
		b.pullHold.close()
		b.popPoll.close()
		for _, p := range b.pools {
			p.Drain()
		}
		if err := b.store.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("flush store: %w", err))
		}
		if err := b.role.close(); err != nil {
			errs = append(errs, fmt.Errorf("close replication: %w", err))
		}
		if err := b.offsets.persist(true); err != nil {
			errs = append(errs, fmt.Errorf("persist consumer offsets: %w", err))
		}
		if err := b.server.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		if err := b.nsClient.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := b.role.afterClose(); err != nil {
			errs = append(errs, err)
		}
		if b.aclCheck != nil {
			if err := b.aclCheck.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := b.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
		b.closeErr = errors.Join(errs...)
		b.log.Info("broker stopped", "addr", b.addr, "err", b.closeErr)
	})
	return b.closeErr
}

// persistOffsets writes consumerOffset.json when it changed (every flushConsumerOffsetInterval).
func (b *Broker) persistOffsets() {
	if err := b.offsets.persist(false); err != nil {
		b.log.Error("persist consumer offsets", "err", err)
	}
}

// closeSilentClients closes client connections silent (no heartbeat) for channelExpiredTimeout (every
// clientHousekeepingInterval).
func (b *Broker) closeSilentClients() {
	for _, c := range b.clients.expired(ms(b.cfg.ChannelExpiredTimeout)) {
		b.log.Info("closing silent client connection", "client", c.RemoteAddr(), "silentFor", ms(b.cfg.ChannelExpiredTimeout))
		_ = c.Close()
	}
}

// Addr is the broker's client address (brokerIP1:listenPort).
func (b *Broker) Addr() string { return b.addr }

// MetricsAddr is the bound address of the Prometheus endpoint, or "" while it is off or not started.
func (b *Broker) MetricsAddr() string { return b.metrics.server.Addr() }

// Config returns the broker's configuration.
func (b *Broker) Config() Config { return b.cfg }

// Store exposes the message store (tests and tools in this module).
func (b *Broker) Store() *store.Store { return b.store }

func (b *Broker) configText() string {
	var buf bytes.Buffer
	_ = conf.Print(&buf, b.liveConfig())
	return buf.String()
}

func (b *Broker) runtimeInfo() map[string]string {
	st := b.store.Stats()
	m := map[string]string{
		"brokerVersionDesc":    "V4_9_4",
		"brokerVersion":        "401",
		"brokerRole":           b.role.name(),
		"commitLogMaxOffset":   itoa(b.store.MaxPhyOffset()),
		"commitLogMinOffset":   itoa(b.store.MinPhyOffset()),
		"dispatchBehindBytes":  itoa(b.store.DispatchBehindBytes()),
		"putMessageTimesTotal": itoa(st.PutMessages),
		"putMessageSizeTotal":  itoa(st.PutBytes),
		"getMessageTimesTotal": itoa(b.stats.Gets()),
		"pullHoldCount":        itoa(int64(b.pullHold.count())),
		"popHoldCount":         itoa(int64(b.popPoll.heldCount())),
		"msgPutTotalTodayNow":  itoa(b.stats.Puts()),
		"msgGetTotalTodayNow":  itoa(b.stats.Gets()),
		"bootTimestamp":        itoa(b.stats.Boot().UnixMilli()),
	}
	b.addAdminRuntimeInfo(m, st)
	return m
}
