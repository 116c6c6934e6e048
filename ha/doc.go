// Package ha is RocketMQ 4.x classic master/slave replication: the master streams raw CommitLog
// bytes from the offset a slave reports, the slave appends them at the same offsets and builds its
// own ConsumeQueue and IndexFile, so the two CommitLogs are byte-identical. A SYNC_MASTER put waits
// until a slave has acknowledged its end.
//
// # Moving parts
//
//	Service (master, service.go)      accept loop on haListenPort (listenPort+1 by default)
//	  connection (connection.go)      per slave: a reader of reports, a writer of transfer frames
//	  groupTransfer (transfer.go)     parks SYNC_MASTER puts; one pass per acknowledgement
//	                                  completes every put it covers, as a flush group commit does
//	Client (slave, client.go)         connects, reports, appends; reconnects after any failure
//	reconcile (reconcile.go)          the tail check: finds where a divergent slave parts from
//	                                  its master and truncates it there
//
// # Who may connect (peer TLS)
//
// Without PeerTLS (peerTlsMode=disabled) the HA port streams the CommitLog to anyone who connects
// and reports an offset: keep it on a network only the group's brokers reach. With it
// (ServiceOptions.PeerTLS, ClientOptions.PeerTLS; tls.go, internal/peertls/doc.go) both ends run a
// mutual TLS handshake before the first frame: the peer's certificate must be signed by the
// cluster CA and name a node of this broker group (rocketraft://<brokerName>/<id>). A connection
// that fails gets no byte of the CommitLog, its reports count for nothing, and it is logged once
// with its address. The frames below then travel inside TLS, unchanged.
//
// # Frames on the HA port (plain TCP or peer TLS, no handshake of their own, big-endian). Wire
// format: never change.
//
// Slave to master, the report (the only frame a slave sends):
//
//	+-----+------+-------------------+------------------------------------------------------+
//	| off | size | field             | notes                                                |
//	+-----+------+-------------------+------------------------------------------------------+
//	|   0 |   8  | slaveMaxPhyOffset | int64: the end of the slave's CommitLog              |
//	+-----+------+-------------------+------------------------------------------------------+
//
// Sent as soon as the connection is up, after every appended frame that moved the offset, and when
// nothing was reported for haSendHeartbeatInterval (5 s). The master reads what arrived and uses
// the last complete 8 bytes. The first report is where streaming starts (0: from the start of the
// master's last CommitLog file); every report is an acknowledgement. A report beyond the master's
// own max offset (the first one included, unlike RocketMQ, #1155/#3015) closes the connection: a
// peer that lies gets nothing and acknowledges nothing.
//
// Master to slave, the transfer frame:
//
//	+-----+------+-------------------+------------------------------------------------------+
//	| off | size | field             | notes                                                |
//	+-----+------+-------------------+------------------------------------------------------+
//	|   0 |   8  | physicalOffset    | int64: master CommitLog offset of the first body byte |
//	|   8 |   4  | bodySize          | int32: 0 = heartbeat                                 |
//	|  12 |   n  | body              | raw CommitLog bytes, written from the mapped file     |
//	+-----+------+-------------------+------------------------------------------------------+
//
// A body is at most haTransferBatchSize (32 KiB) and never crosses a CommitLog file; it may cut a
// record in two (the slave's dispatch waits for the rest). With nothing to send for
// haSendHeartbeatInterval the master sends a header with the next offset and size 0. Each side
// closes a connection it has read nothing from for haHousekeepingInterval (20 s). The slave checks
// that every frame starts at its own max offset (unless it is empty) and drops the connection
// otherwise.
//
// # The tail check (remoting request CheckRequestCode = 61000, private to this broker)
//
// RocketMQ 4.x has no way out for a slave whose log has a tail the master never had (#323): it
// reconnects and fails forever. Before each HA connection the slave here sends its master, over the
// master's remoting port, probes of the records of the CommitLog file holding its tail: the first,
// the last 16 and those at distances 16, 32, 64, ... from the end (see reconcile.go). Request body:
//
//	+-----------+------+--------------------+-----------------------------------------------+
//	| off       | size | field              | notes                                         |
//	+-----------+------+--------------------+-----------------------------------------------+
//	|         0 |   8  | slaveMaxOffset     | int64                                         |
//	|         8 |   4  | n                  | int32, at most 1024                           |
//	| 12 + 16*i |   8  | offset             | int64: start of probe i                       |
//	| 20 + 16*i |   4  | size               | int32: bytes covered (a record, a blank       |
//	|           |      |                    | record's 8-byte header, or a torn tail)       |
//	| 24 + 16*i |   4  | crc                | uint32: CRC-32 (IEEE) of those bytes          |
//	+-----------+------+--------------------+-----------------------------------------------+
//
// Response body (code SUCCESS):
//
//	+--------+------+--------------------+--------------------------------------------------+
//	| off    | size | field              | notes                                            |
//	+--------+------+--------------------+--------------------------------------------------+
//	|      0 |   8  | masterMaxOffset    | int64                                            |
//	|      8 |   8  | masterMinOffset    | int64                                            |
//	|     16 |   4  | n                  | int32: as in the request                         |
//	| 20 + i |   1  | match              | 1: the master holds exactly these bytes here     |
//	+--------+------+--------------------+--------------------------------------------------+
//
// The slave keeps the longest run of matching probes from the start of that file and truncates to
// the end of its last one (saying so in its log); when none matches it looks one file further
// back, and when nothing matches at all it truncates nothing and says the store needs a wipe. As
// the probes compare bytes, the check also catches a master that restarted, lost its unflushed tail
// and then wrote other records at the same offsets (same sizes, different bytes). A report beyond
// the master's max is still refused on the HA port; the check is how a slave learns why. A master
// that does not know the request (a RocketMQ broker) answers REQUEST_CODE_NOT_SUPPORTED and the
// slave streams without the check.
//
// # What a slave serves
//
// The frames above carry CommitLog bytes only, as RocketMQ's do. RocketMQ's slave learns topics,
// subscription groups and offsets from a copy it pulls every 10 s, so a topic created shortly before its
// master died was unknown to a slave holding every acknowledged message of it (TOPIC_NOT_EXIST). A
// master of this broker (package broker, ha_meta.go) therefore also writes its metadata into the log it
// streams, as messages of the system topic rmq_sys_ha_meta: each topic and subscription group change,
// written before the change is made (so before any message of a new topic), and the consumer and delay
// offsets that changed, about once per haOffsetSyncInterval (1 s) while a slave is connected, the whole
// tables in the first such record after the master starts. The slave applies each record as its own
// dispatch reaches it, before the records after it (ha_meta_apply.go); its 10 s copy stays, for the state
// before its replication started and for a master that writes no records (RocketMQ's), and a copy older
// than a record applied is skipped. Hence, after the master is gone:
//
//   - Every message a SYNC_MASTER acknowledged can be consumed from the slave at once, whatever the age
//     of its topic: the acknowledgement covers every byte before the message, the records of its topic
//     and group among them, and the slave's ConsumeQueue shows the message only after those records are
//     applied. Pulls, offset queries and topicStatus on the slave know the topic and the group.
//   - The slave's consumer offsets trail the master's by at most haOffsetSyncInterval plus the stream's
//     lag (on a SYNC_MASTER a few in-flight puts; an idle stream sends a record at once), and the master's
//     trail the consumers' own commits (the official clients commit on each pull and every 5 s). A
//     consumer that starts again from the slave's offsets (restarted, or given the queue by a rebalance)
//     is delivered again at most what its group consumed in that span: duplicates, bounded by it. It skips
//     nothing: an offsets record is written after the messages it covers were in the master's log (they
//     were read there before they were committed), so a slave holding the record holds those messages.
//     A consumer committing to the slave meanwhile keeps its commits when the master returns
//     (broker/ha_offsets.go).
//   - A consumer running across the switch keeps its in-memory offsets (a client's message queue names
//     the broker group, not a host) and pulls from the slave once its route names only the slave (the Go
//     client refreshes routes every 30 s): nothing is delivered twice but the pulls in flight at the
//     kill. e2e/ha_slave_serves_test.go kills a SYNC_MASTER within a second of its last acknowledged send
//     and counts both kinds of duplicates. The Go client's clustering consumers look their offsets up on
//     the master's address only, so one started after the switch waits for a master; a broadcasting one
//     (local offsets) reads from the slave.
//
// # Lifecycle
//
// NewService / NewClient validate the config; Start starts the goroutines; Close stops them and
// waits for every one. Service.Close completes the parked puts: PUT_OK when acknowledged by then,
// else FLUSH_SLAVE_TIMEOUT.
package ha
