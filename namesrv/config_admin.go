package namesrv

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketraft/rocketraft/internal/conf"
	"github.com/rocketraft/rocketraft/remoting"
)

// reloadableKeys are the config keys UPDATE_NAMESRV_CONFIG may change while the name server runs, each with
// what the change does. RocketMQ's name server takes any key but the configBlackList ones and writes them to
// configStorePath; here a key is reloadable only when its readers read the live config, every other key is
// refused naming it, and a change lasts until the restart (configStorePath is not written).
var reloadableKeys = map[string]string{
	"orderMessageEnable":                "routes carry orderTopicConf from the KV table from the next route request",
	"enableAllTopicList":                "GET_ALL_TOPIC_LIST_FROM_NAMESERVER is answered (or refused) from the next request",
	"deleteTopicWithBrokerRegistration": "applies from the next registration with a new data version",
	"raftMasterHoldMillis":              "applies to the next Raft master hand-over",
}

// liveConfig is the config as UPDATE_NAMESRV_CONFIG last changed it: the start-up config until then.
type liveConfig struct {
	mu  sync.Mutex // serializes updates
	cur atomic.Pointer[Config]
}

// liveConfig returns the current config; never modified (an update stores a new copy).
func (s *Server) liveConfig() *Config {
	if c := s.live.cur.Load(); c != nil {
		return c
	}
	return &s.cfg
}

// getNamesrvConfig is GET_NAMESRV_CONFIG: every key with its current value, as a properties text.
func (s *Server) getNamesrvConfig(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
	var buf bytes.Buffer
	if err := conf.Print(&buf, s.liveConfig()); err != nil {
		return errResponse(remoting.SystemError, "print the config: %v", err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = buf.Bytes()
	return resp
}

// updateNamesrvConfig is UPDATE_NAMESRV_CONFIG: the body is a properties text. Every key must be reloadable
// and every value valid, or nothing changes.
func (s *Server) updateNamesrvConfig(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	argv, err := conf.ParseUpdate(req.Body, reloadableKeys, "name server", &Config{})
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	s.live.mu.Lock()
	defer s.live.mu.Unlock()
	next := *s.liveConfig()
	if err := conf.ApplyArgs(&next, argv); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	if err := next.Validate(); err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	s.routes.SetDeleteMissing(next.DeleteTopicWithBrokerRegistration)
	s.routes.SetRaftMasterHold(time.Duration(next.RaftMasterHoldMillis) * time.Millisecond)
	s.live.cur.Store(&next)
	s.logger.Info("namesrv: config updated", "changes", argv, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "")
}
