package namesrv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// Remarks Java's name server gives, kept word for word where clients or tools may show them.
const (
	remarkTopicNotExist = "No topic route info in name server for the topic: "
	remarkCRCMismatch   = "crc32 not match"
)

func (s *Server) registerProcessors() {
	clientPool := remoting.NewPool("namesrv-client", s.cfg.ClientRequestThreadPoolNums,
		s.cfg.ClientRequestThreadPoolQueueCapacity)
	defaultPool := remoting.NewPool("namesrv-default", s.cfg.DefaultThreadPoolNums, s.cfg.DefaultThreadPoolQueueCapacity)
	// Neither keeps anything of a request (remoting.Server.RegisterTransient): a route query answered inline
	// is the command its connection decodes the next one into; a registration's body is hashed and decoded,
	// never kept, and its memory serves the next large one (a fleet's 300 topic tables arrive at once).
	s.rs.RegisterTransient(remoting.GetRouteInfoByTopic, clientPool, s.getRouteInfoByTopic, s.routeInline)
	s.rs.RegisterTransient(remoting.RegisterBroker, defaultPool, s.registerBroker, nil)
	// A route query's topic is a string the route table holds: its header is decoded without a copy.
	s.rs.SetInterner(s.routes.TopicName)
	for code, h := range map[remoting.RequestCode]remoting.HandlerFunc{
		remoting.UnregisterBroker:              s.unregisterBroker,
		remoting.QueryDataVersion:              s.queryDataVersion,
		remoting.BrokerHeartbeat:               s.brokerHeartbeat,
		remoting.GetBrokerClusterInfo:          s.getBrokerClusterInfo,
		remoting.GetAllTopicListFromNameServer: s.getAllTopicList,
		remoting.GetTopicsByCluster:            s.getTopicsByCluster,
		remoting.GetSystemTopicListFromNs:      s.getSystemTopicList,
		remoting.DeleteTopicInNamesrv:          s.deleteTopic,
		remoting.WipeWritePermOfBroker:         s.writePerm(false),
		remoting.AddWritePermOfBroker:          s.writePerm(true),
		remoting.PutKVConfig:                   s.putKVConfig,
		remoting.GetKVConfig:                   s.getKVConfig,
		remoting.DeleteKVConfig:                s.deleteKVConfig,
		remoting.GetKVListByNamespace:          s.getKVListByNamespace,
		remoting.GetNamesrvConfig:              s.getNamesrvConfig,
		remoting.UpdateNamesrvConfig:           s.updateNamesrvConfig,
	} {
		s.rs.Register(code, defaultPool, h)
	}
}

func errResponse(code remoting.ResponseCode, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(code, fmt.Sprintf(format, args...))
}

// badHeader answers a header field that is missing or does not parse.
func badHeader(req *remoting.Command, err error) *remoting.Command {
	return errResponse(remoting.InvalidParameter, "%s: %v", remoting.RequestCode(req.Code), err)
}

// headers reads required string fields in order; the first missing one is the error.
func headers(req *remoting.Command, keys ...string) ([]string, error) {
	out := make([]string, len(keys))
	for i, k := range keys {
		v, err := req.ExtString(k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// registerBroker handles REGISTER_BROKER (DefaultRequestProcessor.registerBrokerWithFilterServer).
func (s *Server) registerBroker(_ context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := headers(req, "brokerName", "brokerAddr", "clusterName")
	if err != nil {
		return badHeader(req, err)
	}
	brokerID, err := req.ExtInt64("brokerId")
	if err != nil {
		return badHeader(req, err)
	}
	compressed, err := req.OptBool("compressed", false)
	if err != nil {
		return badHeader(req, err)
	}
	crc, err := req.OptInt64("bodyCrc32", 0)
	if err != nil {
		return badHeader(req, err)
	}
	timeoutMillis, err := req.OptInt64("heartbeatTimeoutMillis", 0)
	if err != nil {
		return badHeader(req, err)
	}
	raftTerm, err := req.OptInt64("raftTerm", -1) // RocketRaft's Raft mode (raftgroup.go)
	if err != nil {
		return badHeader(req, err)
	}
	raftMasterVIP, err := req.OptBool("raftMasterVip", false) // the master's address follows leadership
	if err != nil {
		return badHeader(req, err)
	}
	var raftSlaveID int64
	if raftTerm >= 0 {
		if raftSlaveID, err = req.ExtInt64("raftSlaveId"); err != nil {
			return badHeader(req, err)
		}
		if raftSlaveID <= protocol.MasterID {
			return errResponse(remoting.InvalidParameter, "REGISTER_BROKER header raftSlaveId %d: must be above 0 (the brokerId of a Raft node that is not master)", raftSlaveID)
		}
	}
	table, err := s.routes.registrationTable(h[1], req.Body, compressed, brokerID == protocol.MasterID, crc)
	if errors.Is(err, errBodyCRC) {
		s.logger.Warn("namesrv: register broker body fails its crc32", "brokerAddr", h[1], "remote", conn.RemoteAddr())
		return errResponse(remoting.SystemError, remarkCRCMismatch)
	}
	if err != nil {
		return errResponse(remoting.SystemError, "Failed to decode RegisterBrokerBody: %v", err)
	}
	s.trackConn(conn)
	res := s.routes.RegisterBroker(RegisterBrokerRequest{
		table:         table,
		ClusterName:   h[2],
		BrokerAddr:    h[1],
		BrokerName:    h[0],
		BrokerID:      brokerID,
		HAServerAddr:  req.OptString("haServerAddr", ""),
		Timeout:       time.Duration(timeoutMillis) * time.Millisecond,
		ConnID:        conn.ID(),
		Raft:          raftTerm >= 0,
		RaftTerm:      uint64(max(raftTerm, 0)),
		RaftSlaveID:   raftSlaveID,
		RaftMasterVIP: raftMasterVIP,
	}, time.Now())
	s.ready.back(s.routes.RoutesAgain)
	resp := remoting.NewResponse(remoting.Success, "")
	if res.HAServerAddr != "" {
		resp.SetExt("haServerAddr", res.HAServerAddr)
	}
	if res.MasterAddr != "" {
		resp.SetExt("masterAddr", res.MasterAddr)
	}
	if orders, ok := s.kv.List(NamespaceOrderTopicConfig); ok {
		resp.Body, _ = json.Marshal(protocol.KVTable{Table: orders})
	}
	return resp
}

// unregisterBroker handles UNREGISTER_BROKER.
func (s *Server) unregisterBroker(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := headers(req, "brokerName", "brokerAddr")
	if err != nil {
		return badHeader(req, err)
	}
	brokerID, err := req.ExtInt64("brokerId")
	if err != nil {
		return badHeader(req, err)
	}
	s.routes.UnregisterBroker(h[1], h[0], brokerID)
	return remoting.NewResponse(remoting.Success, "")
}

// brokerHeartbeat handles BROKER_HEARTBEAT (RocketMQ 5; BrokerHeartbeatRequestHeader: clusterName,
// brokerAddr, brokerName, and optional fields of the controller mode that the name server ignores): the
// address stays alive without a full registration. Java's brokers send it oneway; a request that asks
// for an answer gets SUCCESS, also for an address not registered (as RocketMQ answers).
func (s *Server) brokerHeartbeat(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	addr, err := req.ExtString("brokerAddr")
	if err != nil {
		return badHeader(req, err)
	}
	if !s.routes.BrokerHeartbeat(req.OptString("clusterName", ""), addr, time.Now()) {
		s.logger.Debug("namesrv: heartbeat of a broker not registered", "brokerAddr", addr,
			"cluster", req.OptString("clusterName", ""))
	}
	return remoting.NewResponse(remoting.Success, "")
}

// queryDataVersion handles QUERY_DATA_VERSION: ext changed, body the version the name server holds.
func (s *Server) queryDataVersion(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	addr, err := req.ExtString("brokerAddr")
	if err != nil {
		return badHeader(req, err)
	}
	var dv protocol.DataVersion
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &dv); err != nil {
			return errResponse(remoting.InvalidParameter, "QUERY_DATA_VERSION body is not a DataVersion: %v", err)
		}
	}
	changed, registered, known := s.routes.QueryDataVersion(addr, dv, time.Now())
	resp := remoting.NewResponse(remoting.Success, "")
	resp.SetExt("changed", strconv.FormatBool(changed))
	if known {
		resp.Body, _ = json.Marshal(registered)
	}
	return resp
}

// routeInline answers GET_ROUTEINFO_BY_TOPIC on the connection's reader when the topic's cached answer is
// current (almost always: it changes with registrations that change something), saving the hand-off to a
// worker and back; a stale one is rebuilt on the client pool by getRouteInfoByTopic.
func (s *Server) routeInline(_ *remoting.Conn, req *remoting.Command) (*remoting.Command, bool) {
	topic, err := req.ExtString("topic")
	if err != nil {
		return badHeader(req, err), true
	}
	if !s.ready.serving(time.Now()) {
		return errResponse(remoting.SystemError, remarkNotReady), true
	}
	body, ok, current := s.routes.CachedRouteAnswer(topic)
	if !current {
		return nil, false
	}
	return s.routeResponse(topic, body, ok), true
}

// getRouteInfoByTopic handles GET_ROUTEINFO_BY_TOPIC: compact JSON, or TOPIC_NOT_EXIST.
func (s *Server) getRouteInfoByTopic(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return badHeader(req, err)
	}
	if !s.ready.serving(time.Now()) {
		return errResponse(remoting.SystemError, remarkNotReady)
	}
	body, ok := s.routes.RouteAnswer(topic)
	return s.routeResponse(topic, body, ok)
}

// routeResponse is the answer of a route query: body (shared with every caller: the writer only reads it),
// with the topic's orderTopicConf when orderMessageEnable, or TOPIC_NOT_EXIST.
func (s *Server) routeResponse(topic string, body []byte, ok bool) *remoting.Command {
	if !ok {
		return errResponse(remoting.TopicNotExist, "%s%s", remarkTopicNotExist, topic)
	}
	if s.liveConfig().OrderMessageEnable {
		if conf, _ := s.kv.Get(NamespaceOrderTopicConfig, topic); conf != "" {
			body = WithOrderTopicConf(body, conf)
		}
	}
	return bodyResponse(body)
}

// bodyResponse is a SUCCESS answer with a cached body, or SYSTEM_ERROR when it could not be encoded.
func bodyResponse(body []byte) *remoting.Command {
	if body == nil {
		return errResponse(remoting.SystemError, "encode answer: see the name server's log")
	}
	resp := remoting.NewPooledResponse(remoting.Success, "")
	resp.Body = body
	return resp
}

func (s *Server) getBrokerClusterInfo(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
	return bodyResponse(s.routes.ClusterInfoAnswer())
}

func (s *Server) getAllTopicList(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
	if !s.liveConfig().EnableAllTopicList {
		return errResponse(remoting.SystemError, "disable")
	}
	return bodyResponse(s.routes.AllTopicsAnswer())
}

func (s *Server) getTopicsByCluster(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	cluster, err := req.ExtString("cluster")
	if err != nil {
		return badHeader(req, err)
	}
	return bodyResponse(s.routes.TopicsByClusterAnswer(cluster))
}

func (s *Server) getSystemTopicList(context.Context, *remoting.Conn, *remoting.Command) *remoting.Command {
	return bodyResponse(s.routes.SystemTopicsAnswer())
}

// deleteTopic handles DELETE_TOPIC_IN_NAMESRV: of every broker, or of one cluster's with clusterName.
func (s *Server) deleteTopic(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic, err := req.ExtString("topic")
	if err != nil {
		return badHeader(req, err)
	}
	s.routes.DeleteTopic(topic, req.OptString("clusterName", ""))
	s.logger.Info("namesrv: topic deleted", "topic", topic, "cluster", req.OptString("clusterName", ""))
	return remoting.NewResponse(remoting.Success, "")
}

// writePerm handles WIPE_WRITE_PERM_OF_BROKER (allow false) and ADD_WRITE_PERM_OF_BROKER (allow true).
func (s *Server) writePerm(allow bool) remoting.HandlerFunc {
	countKey := "wipeTopicCount"
	if allow {
		countKey = "addTopicCount"
	}
	return func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		name, err := req.ExtString("brokerName")
		if err != nil {
			return badHeader(req, err)
		}
		n := s.routes.SetWritePerm(name, allow)
		s.logger.Info("namesrv: broker write permission changed", "brokerName", name, "write", allow, "topics", n)
		return remoting.NewResponse(remoting.Success, "").SetExt(countKey, strconv.Itoa(n))
	}
}

func (s *Server) putKVConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := headers(req, "namespace", "key")
	if err != nil {
		return errResponse(remoting.SystemError, "namespace or key is null")
	}
	if err := s.kv.Put(h[0], h[1], req.OptString("value", "")); err != nil {
		s.logger.Error("namesrv: KV config not persisted", "err", err)
		return errResponse(remoting.SystemError, "%v", err)
	}
	return remoting.NewResponse(remoting.Success, "")
}

func (s *Server) getKVConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := headers(req, "namespace", "key")
	if err != nil {
		return badHeader(req, err)
	}
	v, ok := s.kv.Get(h[0], h[1])
	if !ok {
		return errResponse(remoting.QueryNotFound, "No config item, Namespace: %s Key: %s", h[0], h[1])
	}
	return remoting.NewResponse(remoting.Success, "").SetExt("value", v)
}

func (s *Server) deleteKVConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := headers(req, "namespace", "key")
	if err != nil {
		return badHeader(req, err)
	}
	if err := s.kv.Delete(h[0], h[1]); err != nil {
		s.logger.Error("namesrv: KV config not persisted", "err", err)
		return errResponse(remoting.SystemError, "%v", err)
	}
	return remoting.NewResponse(remoting.Success, "")
}

func (s *Server) getKVListByNamespace(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns, err := req.ExtString("namespace")
	if err != nil {
		return badHeader(req, err)
	}
	table, ok := s.kv.List(ns)
	if !ok {
		return errResponse(remoting.QueryNotFound, "No config item, Namespace: %s", ns)
	}
	return remoting.NewJSONResponse(protocol.KVTable{Table: table})
}
