// Package remoting speaks RocketMQ's "remoting" protocol: the frame codec, the command with its typed header
// accessors, the table of request and response codes, a TCP server that hands requests to worker pools by
// request code, and a client with pooled connections.
//
// # Frame (wire format: never change)
//
//	+--------------+-----------------------------+-----------------+-------------------------+
//	| length int32 | serType byte | headerLen u24| header          | body                    |
//	|  4 bytes     |  1 byte      |  3 bytes     | headerLen bytes | length-4-headerLen bytes|
//	+--------------+-----------------------------+-----------------+-------------------------+
//	length = 4 + headerLen + bodyLen (it does not count itself); all integers big-endian
//	serType 0 = JSON header, 1 = ROCKETMQ binary header
//
// A frame whose length is above the reader's limit (MaxFrameSize, 16 MiB, by default), below 4, or whose
// header length runs past the frame is refused; the server closes the connection and logs why.
//
// # JSON header (serType 0)
//
//	{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}
//
// code, version, opaque and flag are JSON numbers; every extFields value is a JSON string (the official Go
// client cannot decode a command with a numeric one). On input, remark and extFields may be null or missing,
// language may be a name or a number, unknown keys are skipped.
//
// # ROCKETMQ binary header (serType 1)
//
//	+------------+---------------+--------------+-------------+-----------+
//	| code int16 | language int8 | version int16| opaque int32| flag int32|   21 fixed bytes with the two
//	+------------+---------------+--------------+-------------+-----------+   length fields below
//	| remarkLen int32 | remark bytes | extLen int32 | ext bytes            |
//	+-----------------+--------------+--------------+----------------------+
//	ext bytes = { keyLen int16 | key | valLen int32 | value } repeated
//
// # Command flags (wire format: never change)
//
//	bit 0 (1)  response        bit 1 (2)  oneway request (no response expected)
//
// A response echoes its request's opaque and is encoded in the request's serialize type.
//
// # Server
//
// One reader goroutine per connection decodes frames (through a read buffer of 4 KiB that doubles while
// reads fill it, up to ReadBufferSize, and halves again after a run of small reads; a frame larger than the
// buffer is read into its own memory and does not grow it: readbuf.go) and hands each request to the worker
// Pool registered for
// its code; a full pool queue is answered SYSTEM_BUSY at once, an unknown code REQUEST_CODE_NOT_SUPPORTED. A
// handler returns its response, or nil and answers later with Conn.Reply from any goroutine (long-poll pulls,
// SYNC_FLUSH sends). A route registered with an InlineFunc (Server.RegisterInline) answers on the reader what
// cannot block (the broker's sends to an existing topic) and hands the rest to its pool. A route registered
// with Server.RegisterTransient promises its handler and InlineFunc keep nothing of a request: its frames of
// 64 KiB to 1 MiB are read into memory the server keeps (up to 16 MiB, framecache.go) and given back once the
// handler answered, so that a burst of large requests (a fleet's REGISTER_BROKER tables) does not feed the
// garbage collector, and a request answered inline is the command its connection decodes the next JSON
// header into (its ExtFields map cleared and filled again). While a server has a transient route its large
// frames are read and handled in turns, two at a time (framecache.go): a burst of 300 tables goes through
// the same few buffers, its readers wait parked rather than runnable ahead of small requests, and a peer that
// has not sent its frame within 50 ms ends its turn and finishes outside the turns. Every connection reads a
// small frame into the last one's memory when that one's command had no body, and NewPooledResponse's
// commands go back to a pool once written. A server given an Interner (Server.SetInterner, intern.go)
// decodes a JSON header in place when every string it keeps is common or interned, and from a copy
// otherwise: a name server's route query, whose topic its route table holds, allocates nothing on the
// server where it allocated about 850 bytes in six objects. One writer goroutine per connection gathers every
// queued frame (header bytes, Body and the zero-copy BodyParts) into one writev per wake-up. Connections
// silent for IdleTimeout are closed.
//
// Server.Listen adds an extra listening address (listener.go): its connections are served like the main
// listener's, and Listener.Close stops accepting there and closes every connection that came through it at
// once. The broker's Raft mode holds the master's virtual address (masterVipAddress) with one while it is master,
// so that clients of a master that steps down see their connections end and reconnect to the next holder.
// A Pool also keeps the enqueue time of its queued tasks, for HeadWait (how long the oldest has waited).
//
// # Interceptors (intercept.go)
//
// Features hook into a server through a chain that each one can only extend: Server.AddGuard,
// AddRequestObserver and AddReplyObserver append a named function; nothing removes or replaces one, so no
// feature can switch another's check off (issue 37: the name server's request counter, installed in the one
// interceptor slot there was, replaced its ACL check). A request with a registered handler (an unknown code
// is answered REQUEST_CODE_NOT_SUPPORTED before any of it) goes through, in this fixed order:
//
//  1. the guards (Interceptor), in the order added, once per request, on the handler's pool worker or on the
//     reader before an InlineFunc, with the connection (its remote address, its TLS state). A guard lets the
//     request through (nil) or answers it; the first answer ends the chain: no later guard, no request
//     observer and no handler sees a refused request. Every guard must let a request through. The ACL checks
//     are guards: the broker's "acl" (package acl), the name server's "acl" or "acl+certWrites" (writes
//     signed, or made by a client certificate of the cluster CA; namesrv/acl.go).
//  2. the request observers (RequestObserver), in the order added: they see what the guards let through and
//     cannot answer. The name server's request counter ("namesrv_requests") is one.
//  3. the InlineFunc or the handler.
//  4. the reply observers (ReplyObserver), in the order added, as Conn.Reply queues each answer, the guards'
//     refusals included: the request (when it was read, whether its handler held it for a long poll:
//     Command.MarkSuspended), the response code and whether the answer was queued, dropped (oneway) or not
//     writable. The broker's rpc latency metric ("rpc_latency") is one.
//
// A panic in any of them is answered SYSTEM_ERROR, as one in a handler. With nothing added the cost is one
// atomic load per request; with guards and observers, one call each and no allocation (BenchmarkIntercept).
// The chain is copied on each addition: add before Start (a later addition is logged and runs for requests
// read from then on). Start, and Listen for an extra address, log one line per port with its TLS mode, its
// client certificate policy (clientCerts) and the names of the guards and observers its connections run:
//
//	remoting: listening addr=127.0.0.1:9876 tls=permissive clientCerts=RequestClientCert guards=acl+certWrites observers=namesrv_requests
//
// # TLS (tls.go, tls_config.go)
//
// A server runs in TLSMode disabled (plain only; the first byte is never looked at), permissive (plain and TLS
// on one port) or enforcing (TLS only). In the last two, each connection's goroutine reads one byte before the
// reader starts: 0x16, the TLS handshake record type, starts a TLS handshake; anything else is the high byte of
// a frame length (0x16 there would mean a frame of at least 352 MiB, above any accepted size), so in
// permissive mode the connection is served plain with that byte put back, and in enforcing mode it is closed.
// The accept loop never waits on a peer. A TLS connection gathers each write batch in a 16 KiB buffer so
// that small frames travel in full records; plain connections keep their one writev per batch.
//
// TLSConfig carries the config keys, named after RocketMQ's tls.* system properties (tlsServerMode,
// tlsServerCertPath, tlsServerKeyPath, tlsServerNeedClientAuth, tlsServerAuthClient, tlsServerTrustCertPath,
// tlsTestModeEnable, tlsEnable, tlsClientAuthServer, tlsClientTrustCertPath, tlsClientCertPath,
// tlsClientKeyPath). The server certificate is read again at the first handshake after its files change. As
// in RocketMQ, a client does not verify the server's certificate unless tlsClientAuthServer is set; the
// official Go client never does (WithTls dials with InsecureSkipVerify).
//
// Conn.TLSState gives a handler the connection's handshake, with the certificates its client presented
// (tlsServerNeedClientAuth optional or require): the name server authorises writes by them (namesrv/acl.go).
//
// # Client
//
// Client keeps ConnsPerAddr connections per address, dialled on first use, matches responses to requests by
// opaque (a response nobody waits for is dropped), and offers sync, async and oneway calls; ctx deadlines are
// the timeouts. Requests that a server sends to the client are handled by functions registered by code. With
// ClientConfig.TLS it dials TLS; with ClientConfig.Credentials it signs every request it sends (SignRequest).
// Secret prints masked, so credentials in a config never reach a log.
package remoting
