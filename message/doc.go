// Package message is the RocketMQ 4.x stored-message record, byte for byte: the layout the
// CommitLog holds and a pull answer carries, its magic codes and sysFlag bits, the encoded
// properties string and the well-known property names, the offset message id
// (host + physical offset) and the tag hash of ConsumeQueue units. It is a leaf package: it
// imports only the standard library, so the store, the broker and the client tools (mqadmin,
// mqbench, the chaos workload) share one codec, and tools that decode records build for every
// platform without the store.
//
// # Stored-message record
//
// Big-endian. Offsets are for IPv4 hosts; an IPv6 host (sysFlag 0x10 born, 0x20 store)
// takes 20 bytes instead of 8 and shifts what follows. Wire format: never change.
//
//	+------+------+-----------------------------+------------------------------------------+
//	| off  | size | field                       | notes                                    |
//	+------+------+-----------------------------+------------------------------------------+
//	|   0  |   4  | totalSize                   | whole record, this field included        |
//	|   4  |   4  | magicCode                   | 0xDAA320A7 (V1); 0xCBD43194 = blank      |
//	|   8  |   4  | bodyCRC                     | CRC32(body) & 0x7FFFFFFF                 |
//	|  12  |   4  | queueId                     |                                          |
//	|  16  |   4  | flag                        | user flag                                |
//	|  20  |   8  | queueOffset                 | 0 for prepared/rolled-back transactions  |
//	|  28  |   8  | physicalOffset              | = the record's CommitLog offset          |
//	|  36  |   4  | sysFlag                     | MessageSysFlag bits                      |
//	|  40  |   8  | bornTimestamp               | ms                                       |
//	|  48  |   8  | bornHost                    | IPv4 + int32 port (IPv6: 16 + 4)         |
//	|  56  |   8  | storeTimestamp              | ms, assigned under the CommitLog lock    |
//	|  64  |   8  | storeHost                   | the broker's client-facing ip:port       |
//	|  72  |   4  | reconsumeTimes              |                                          |
//	|  76  |   8  | preparedTransactionOffset   |                                          |
//	|  84  |   4  | bodyLength                  |                                          |
//	|  88  |   n  | body                        | as the producer sent it                  |
//	|      |   1  | topicLength                 | <= 127                                   |
//	|      |   t  | topic                       |                                          |
//	|      |   2  | propertiesLength            | <= 32767                                 |
//	|      |   p  | properties                  | name 0x01 value 0x02 ...                 |
//	+------+------+-----------------------------+------------------------------------------+
//
// EncodeRecordAt is the one encoder of this layout (the store calls it under the CommitLog lock
// with the offsets it assigns); ParseRecord is the one framing check, which never panics and
// wraps ErrCorruptRecord; DecodeMessage copies a parsed record out. A blank record (magic
// 0xCBD43194, totalSize = bytes left) closes the unused tail of a CommitLog file: the store
// writes it, this package only names its magic. A run of records back to back (the data of a
// Raft message entry) is placed with PatchRecords (physical offsets written, queue offsets
// zeroed for the store's dispatch to assign) and checked with CheckRecords (framing, each
// record at its own offset, optionally the body CRCs), as the Raft log's recovery does.
//
// # Properties
//
// name 0x01 value 0x02 name 0x01 value 0x02 ... (RocketMQ's MessageDecoder), at most 32767
// bytes. KEYS holds several keys separated by spaces. Names are RocketMQ's MessageConst.
//
// # Message trace
//
// trace.go decodes the records clients with tracing on send to the trace topic (RocketMQ's RIP-6: Pub,
// SubBefore, SubAfter, EndTransaction), drawn there; the broker stores them as any message, and mqadmin
// queryMsgTraceById and the console find them by message id through the IndexFile.
//
// # Message ids
//
// The offset message id (what a broker returns as msgId and what VIEW_MESSAGE_BY_ID takes) is
// the hex of store host address + int32 port + int64 physical offset: 32 hex digits for IPv4,
// 56 for IPv6. TagsHash is Java's String.hashCode of the tag, as ConsumeQueue units carry it.
package message
