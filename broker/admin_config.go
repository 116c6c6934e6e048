package broker

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/magiconair/properties"

	"github.com/rocketraft/rocketraft/internal/conf"
	"github.com/rocketraft/rocketraft/remoting"
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
	loader := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	props, err := loader.LoadBytes(req.Body)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "the body is not a properties text: %v", err)
	}
	keys := props.Keys()
	if len(keys) == 0 {
		return errResponse(remoting.InvalidParameter, "no config key in the body")
	}
	argv := make([]string, 0, len(keys))
	for _, k := range keys {
		if _, ok := reloadableKeys[k]; !ok {
			return errResponse(remoting.InvalidParameter,
				"config key %s cannot change while the broker runs (reloadable: %s); set it in the config file and restart",
				k, strings.Join(ReloadableConfigKeys(), ", "))
		}
		v, _ := props.Get(k)
		argv = append(argv, "--"+k+"="+v)
	}
	b.admin.configMu.Lock()
	defer b.admin.configMu.Unlock()
	next := *b.liveConfig()
	if err := applyConfigText(&next, argv); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if _, ok := props.Get("logLevel"); ok && b.opts.SetLogLevel != nil {
		if err := b.opts.SetLogLevel(next.Log.LogLevel); err != nil {
			return errResponse(remoting.InvalidParameter, "%v", err)
		}
	}
	b.admin.live.Store(&next)
	sort.Strings(argv)
	b.log.Info("broker config updated", "changes", argv, "by", conn.RemoteAddr())
	b.triggerRegister()
	return remoting.NewResponse(remoting.Success, "")
}

// applyConfigText sets --key=value arguments on c and validates the result.
func applyConfigText(c *Config, argv []string) error {
	args, err := conf.ParseArgs(argv)
	if err != nil {
		return err
	}
	res, err := conf.Load(args, c)
	if err != nil {
		return err
	}
	if len(res.UnknownKeys) > 0 {
		return fmt.Errorf("unknown config key %s", res.UnknownKeys[0])
	}
	return c.Validate()
}
