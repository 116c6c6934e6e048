package broker

import (
	"context"
	"strings"

	"github.com/rocketraft/rocketraft/internal/conf"
	"github.com/rocketraft/rocketraft/remoting"
	"github.com/rocketraft/rocketraft/store"
)

// reloadableKeys are the config keys UPDATE_BROKER_CONFIG may change while the broker runs, each with what
// the change does. A key is reloadable when every reader of it reads Broker.liveConfig instead of the
// start-up config; add a key here only after moving its readers. Every other key is refused with a remark
// naming it: it takes effect only through the config file and a restart.
var reloadableKeys = map[string]string{
	// Read by the send, pull and send-back checks (Broker.permission); 2 write, 4 read, 6 both.
	"brokerPermission": "sends and pulls are checked against it from the next request",
	// Applied to the process's logging through Options.SetLogLevel (mqbroker: stderr and every log file).
	"logLevel": "the level of stderr and the log files changes at once",
	// Read by the send check on a topic the broker does not have (send.go).
	"autoCreateTopicEnable": "a send to an unknown topic with a default topic creates it from the next send",
	// Held by the subscription group table (subscription_group.go).
	"autoCreateSubscriptionGroup": "a pull or heartbeat of an unknown group creates it from the next request",
	// Read by the pull answer's suggested broker (pull.go).
	"slaveReadEnable": "pulls that fall behind are sent to the slave from the next pull",
	// Read when a pull finds nothing (pull.go).
	"longPollingEnable":     "pulls that find nothing are held (long polling) or not from the next pull",
	"shortPollingTimeMills": "the hold of a pull without long polling, from the next pull",
	// Read by the send of a half (prepared) message (send.go).
	"rejectTransactionMessage": "half messages are refused or accepted from the next send",
	// The store's clean service (store.SetCleanPolicy) reads them on its next run.
	"fileReservedTime":      "CommitLog files older than this many hours go on the clean service's next run",
	"deleteWhen":            "the hours the clean service deletes expired files, from its next run",
	"diskMaxUsedSpaceRatio": "the disk use past which files go at once, from the clean service's next run",
}

// ReloadableConfigKeys lists the keys UPDATE_BROKER_CONFIG accepts, sorted.
func ReloadableConfigKeys() []string {
	return sortedKeys(reloadableKeys)
}

// liveConfig is the configuration as UPDATE_BROKER_CONFIG last changed it (the start-up config until then).
// The returned value is never modified: an update stores a new copy.
func (b *Broker) liveConfig() *Config {
	if c := b.admin.live.Load(); c != nil {
		return c
	}
	return &b.cfg
}

// processUpdateBrokerConfig is UPDATE_BROKER_CONFIG (mqadmin updateBrokerConfig): the body is a properties
// text ("key=value" lines). Every key must be reloadable and every value valid, or nothing changes. The
// change lasts until the broker restarts (it is not written to the config file). GET_BROKER_CONFIG shows it.
func (b *Broker) processUpdateBrokerConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	argv, err := conf.ParseUpdate(req.Body, reloadableKeys, "broker", &Config{})
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	b.admin.configMu.Lock()
	defer b.admin.configMu.Unlock()
	next := *b.liveConfig()
	if err := applyConfigText(&next, argv); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if hasKey(argv, "logLevel") && b.opts.SetLogLevel != nil {
		if err := b.opts.SetLogLevel(next.Log.LogLevel); err != nil {
			return errResponse(remoting.InvalidParameter, "%v", err)
		}
	}
	if hasKey(argv, "fileReservedTime") || hasKey(argv, "deleteWhen") || hasKey(argv, "diskMaxUsedSpaceRatio") {
		if err := b.store.SetCleanPolicy(store.CleanPolicy{FileReservedTime: next.FileReservedTime,
			DeleteWhen: next.DeleteWhen, DiskMaxUsedSpaceRatio: next.DiskMaxUsedSpaceRatio}); err != nil {
			return errResponse(remoting.InvalidParameter, "%v", err)
		}
	}
	b.groups.autoCreate.Store(next.AutoCreateSubscriptionGroup)
	b.admin.live.Store(&next)
	b.log.Info("broker config updated", "changes", argv, "by", conn.RemoteAddr())
	b.triggerRegister()
	return remoting.NewResponse(remoting.Success, "")
}

// hasKey reports whether --key=... is among argv.
func hasKey(argv []string, key string) bool {
	for _, a := range argv {
		if strings.HasPrefix(a, "--"+key+"=") {
			return true
		}
	}
	return false
}

// applyConfigText sets --key=value arguments on c and validates the result.
func applyConfigText(c *Config, argv []string) error {
	if err := conf.ApplyArgs(c, argv); err != nil {
		return err
	}
	return c.Validate()
}
