package proxy

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
)

// Authorizer checks one call against the ACL; *acl.Validator is one.
type Authorizer interface {
	// CheckV2 returns nil when the call from remote ("ip:port"), signed with the authorization and
	// x-mq-date-time headers, may have every one of needs; else an error that says why without any secret.
	// Safe for concurrent use.
	CheckV2(remote, authorization, dateTime string, needs []acl.Need) error
}

var _ Authorizer = (*acl.Validator)(nil)

// needsOf lists what a request needs, as RocketMQ's plain ACL does for the gRPC calls: PUB on the topic of
// a send, an end of transaction or a recall; SUB on the topic and the group of every consuming call; SUB on
// the group of a heartbeat or a termination. QueryRoute and Telemetry need a valid signature only.
func needsOf(req any) []acl.Need {
	var topic, group string
	pub := false
	switch r := req.(type) {
	case *v2pb.SendMessageRequest:
		for _, m := range r.GetMessages() {
			topic = m.GetTopic().GetName()
		}
		pub = true
	case *v2pb.EndTransactionRequest:
		topic, pub = r.GetTopic().GetName(), true
	case *v2pb.RecallMessageRequest:
		topic, pub = r.GetTopic().GetName(), true
	case *v2pb.HeartbeatRequest:
		group = r.GetGroup().GetName()
	case *v2pb.NotifyClientTerminationRequest:
		group = r.GetGroup().GetName()
	case *v2pb.QueryAssignmentRequest:
		topic, group = r.GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.ReceiveMessageRequest:
		topic, group = r.GetMessageQueue().GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.AckMessageRequest:
		topic, group = r.GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.ChangeInvisibleDurationRequest:
		topic, group = r.GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.ForwardMessageToDeadLetterQueueRequest:
		topic, group = r.GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.PullMessageRequest:
		topic, group = r.GetMessageQueue().GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.UpdateOffsetRequest:
		topic, group = r.GetMessageQueue().GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.GetOffsetRequest:
		topic, group = r.GetMessageQueue().GetTopic().GetName(), r.GetGroup().GetName()
	case *v2pb.QueryOffsetRequest:
		topic = r.GetMessageQueue().GetTopic().GetName()
	}
	var out []acl.Need
	if topic != "" {
		perm := acl.Sub
		if pub {
			perm = acl.Pub
		}
		out = append(out, acl.Need{Name: topic, Perm: perm})
	}
	if group != "" {
		out = append(out, acl.Need{Name: group, Group: true, Perm: acl.Sub})
	}
	return out
}

// authorize checks the call in ctx for needs; nil without an Authorizer.
func (s *Server) authorize(ctx context.Context, method string, req any) error {
	if s.opts.Auth == nil {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	remote := ""
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		remote = p.Addr.String()
	}
	if err := s.opts.Auth.CheckV2(remote, first(headerAuth), first(headerDateTime), needsOf(req)); err != nil {
		s.log.Info("acl: call refused", "remote", remote, "method", method, "client", first(headerClientID), "err", err)
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return nil
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authorize(ctx, info.FullMethod, req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if s.opts.Auth == nil {
		return handler(srv, ss)
	}
	if info.IsClientStream { // Telemetry: the signature is checked once, at the start
		if err := s.authorize(ss.Context(), info.FullMethod, nil); err != nil {
			return err
		}
		return handler(srv, ss)
	}
	return handler(srv, &checkedStream{ServerStream: ss, s: s, method: info.FullMethod})
}

// checkedStream checks the one request of a server stream (ReceiveMessage, PullMessage) as it is read.
type checkedStream struct {
	grpc.ServerStream
	s       *Server
	method  string
	checked bool
}

func (cs *checkedStream) RecvMsg(m any) error {
	if err := cs.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if !cs.checked {
		cs.checked = true
		return cs.s.authorize(cs.Context(), cs.method, m)
	}
	return nil
}
