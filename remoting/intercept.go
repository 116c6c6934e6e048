package remoting

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// Interceptor is a guard: it looks at a request before its handler runs, on the handler's pool worker, or on
// the connection's reader before an InlineFunc (so it may take a few microseconds, not a network round trip).
// It returns nil to let the request through, or the response that answers it instead; the handler, the later
// guards and the request observers then never see the request. conn.RemoteAddr() is the peer. It is called
// concurrently from every pool and reader.
type Interceptor func(conn *Conn, req *Command) *Command

// RequestObserver sees a request every guard let through, just before its handler, on the same goroutine as
// the guards. It cannot answer or refuse the request; it must not block or keep req past its return. It is
// called concurrently from every pool and reader.
type RequestObserver func(conn *Conn, req *Command)

// chain is what a Server runs around its handlers, in this order (doc.go, "Interceptors"): every guard in the
// order added, stopping at the first refusal; then every request observer in the order added; then the
// handler. Reply observers (replyObservers) see every answer, the guards' refusals included. A chain is never
// changed once published: Add* copies it, so a request runs the chain that was in place when it got to it.
type chain struct {
	guards        []Interceptor
	observers     []RequestObserver
	replies       []ReplyObserver
	guardNames    []string // of guards, in the same order
	observerNames []string // of observers, then of replies
}

// AddGuard appends g to the server's guards under name (what the start-up line shows: "acl"). A guard can
// neither be removed nor replaced, and no other call removes it: a feature adds itself and cannot switch
// another off. Add guards before Start; one added later runs for requests read from then on (and is logged).
// An empty or already used name, or a nil g, is a programming error and panics.
func (s *Server) AddGuard(name string, g Interceptor) {
	if g == nil {
		panic(fmt.Sprintf("remoting: AddGuard %q with a nil Interceptor", name))
	}
	s.extendChain("guard", name, func(c *chain) {
		c.guards = append(c.guards, g)
		c.guardNames = append(c.guardNames, name)
	})
}

// AddRequestObserver appends o to the request observers under name (see RequestObserver): it sees the
// requests the guards let through. As AddGuard: it cannot be removed, a bad name or a nil o panics.
func (s *Server) AddRequestObserver(name string, o RequestObserver) {
	if o == nil {
		panic(fmt.Sprintf("remoting: AddRequestObserver %q with a nil RequestObserver", name))
	}
	s.extendChain("request observer", name, func(c *chain) {
		c.observers = append(c.observers, o)
		c.observerNames = append(c.observerNames, name)
	})
}

// AddReplyObserver appends o to the reply observers under name (see ReplyObserver): it sees every answer as
// Conn.Reply queues it, the guards' refusals included, after the observers added before it. As AddGuard: it
// cannot be removed, a bad name or a nil o panics.
func (s *Server) AddReplyObserver(name string, o ReplyObserver) {
	if o == nil {
		panic(fmt.Sprintf("remoting: AddReplyObserver %q with a nil ReplyObserver", name))
	}
	s.extendChain("reply observer", name, func(c *chain) {
		c.replies = append(c.replies, o)
		c.observerNames = append(c.observerNames, name)
	})
}

// extendChain publishes a copy of the chain with add applied, under regMu.
func (s *Server) extendChain(kind, name string, add func(*chain)) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	next := chain{}
	if old := s.chain.Load(); old != nil {
		next = chain{guards: clip(old.guards), observers: clip(old.observers), replies: clip(old.replies),
			guardNames: clip(old.guardNames), observerNames: clip(old.observerNames)}
	}
	if strings.TrimSpace(name) == "" {
		panic(fmt.Sprintf("remoting: a %s without a name", kind))
	}
	for _, n := range append(clip(next.guardNames), next.observerNames...) {
		if n == name {
			panic(fmt.Sprintf("remoting: a second guard or observer named %q", name))
		}
	}
	add(&next)
	s.chain.Store(&next)
	// Conn.Reply loads one ReplyObserver (conn.go): one observer is stored as it is, more as one function
	// that calls each in turn (built here, once, so that a reply allocates nothing).
	if replies := next.replies; len(replies) > 0 {
		all := replies[0]
		if len(replies) > 1 {
			all = func(req *Command, respCode int32, result ReplyResult) {
				for _, o := range replies {
					o(req, respCode, result)
				}
			}
		}
		s.replies.Store(&all)
	}
	if s.Addr() != nil {
		s.logger.Info("remoting: "+kind+" added after start", "name", name)
	}
}

// clip is a copy of x whose appends never write into x's array.
func clip[T any](x []T) []T { return append([]T(nil), x...) }

// Guards lists the guards' names in the order they run ("none" is never in it).
func (s *Server) Guards() []string {
	if c := s.chain.Load(); c != nil {
		return clip(c.guardNames)
	}
	return nil
}

// intercept runs the guards, then the request observers, on req: it returns the first guard's refusal, or nil
// when the handler is to run. With nothing added it costs one atomic load; it never allocates.
func (s *Server) intercept(c *Conn, req *Command) *Command {
	ch := s.chain.Load()
	if ch == nil {
		return nil
	}
	for _, g := range ch.guards {
		if refused := g(c, req); refused != nil {
			return refused
		}
	}
	for _, o := range ch.observers {
		o(c, req)
	}
	return nil
}

// guardAttrs are the start-up line's fields of a listening port: the TLS mode and client certificate policy,
// and the guards and observers every connection of the port runs.
func (s *Server) guardAttrs() []any {
	clientAuth := "none"
	if s.cfg.TLSMode.on() && s.cfg.TLS != nil && s.cfg.TLS.ClientAuth != tls.NoClientCert {
		clientAuth = s.cfg.TLS.ClientAuth.String()
	}
	guards, observers := "none", "none"
	if c := s.chain.Load(); c != nil {
		if len(c.guardNames) > 0 {
			guards = strings.Join(c.guardNames, ",")
		}
		if len(c.observerNames) > 0 {
			observers = strings.Join(c.observerNames, ",")
		}
	}
	return []any{"tls", s.cfg.TLSMode, "clientCerts", clientAuth, "guards", guards, "observers", observers}
}
