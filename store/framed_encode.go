package store

import (
	"fmt"
	"net/netip"

	"github.com/rocketraft/rocketraft/message"
)

// StoreHost is Options.StoreHost: the address written into every record this store encodes
// and into its offset msg ids.
func (s *Store) StoreHost() netip.AddrPort { return s.opts.StoreHost }

// EncodeMessages appends to dst the stored records of msgs as a put would write them, for a
// log that places them itself (the Raft mode's proposer): one message, or a batch for one
// topic and queue with the rules of PutMessages. Every record carries this store's host, the
// store timestamp returned (the store's clock, as a put would read it), queue offset 0 and
// physical offset 0 (message.PatchRecords and DispatchMessages fill them where the records land).
// The limits are a put's: maxMessageSize per body, the record format's, and the records
// together must fit a CommitLog file. Nothing is appended on an error. It reads only the
// configuration: safe for concurrent use, in any mode.
func (s *Store) EncodeMessages(dst []byte, msgs []*message.Message) ([]byte, int64, error) {
	if len(msgs) != 1 {
		if err := checkBatch(msgs); err != nil {
			return dst, 0, err
		}
	}
	var one [1]message.Encoded
	enc := one[:]
	if len(msgs) > 1 {
		enc = make([]message.Encoded, len(msgs))
	}
	total, err := s.commitLog.prepare(msgs, enc)
	if err != nil {
		return dst, 0, err
	}
	now := s.clock.Now().UnixMilli()
	start := len(dst)
	dst = append(dst, make([]byte, total)...)
	off := start
	for i := range enc {
		message.EncodeRecordAt(dst[off:], &enc[i], 0, 0, now)
		off += enc[i].Length
	}
	if off != len(dst) {
		return dst[:start], 0, fmt.Errorf("store: encoded %d bytes of records, expected %d", off-start, total)
	}
	return dst, now, nil
}
