package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/rocketraft/rocketraft/message"
)

// How a slave finds where its log and its master's part (RocketMQ 4.x has no answer: a slave
// with a tail the master never had reconnects and fails forever, issue #323).
//
// Before each HA connection the slave walks the records of the CommitLog file that holds its
// tail and sends probes of them (offset, size, CRC-32 of the bytes) to the master, which says
// which it holds byte for byte. Logs that part do so at one point and differ after it, so the
// slave keeps the longest run of matching probes from the start of the file, and truncates to
// the end of its last one when that is below its max offset. When not even the first probe of
// the file matches, it looks one file further back. Because the probes compare bytes, this also
// finds a master that restarted, lost its unflushed tail and wrote other records of the same
// sizes at the same offsets.

const (
	// walkChunk is how much of the log one read of the record walk covers.
	walkChunk = 1 << 20
	// tailProbes is how many of the last records are probed one by one; older ones are probed
	// at exponentially growing distances.
	tailProbes = 16
	// recordHeader is the part of a record the walk reads: totalSize and magic code.
	recordHeader = 8
)

// probeRange is a probe and the log offset a match lets the slave keep (the end of the record;
// for a blank record, of which only the header is compared, the end of its file).
type probeRange struct {
	Probe
	keep int64
}

// errNoCommonOffset says the slave's log shares nothing with the master's that the check could
// find; nothing is truncated.
var errNoCommonOffset = errors.New("ha: the slave's CommitLog shares no record with the master's")

// reconcile runs the tail check and truncates the slave's log to the common offset. It returns
// how many bytes it dropped.
func (c *Client) reconcile(ctx context.Context) (int64, error) {
	maxOff := c.cl.MaxPhyOffset()
	if maxOff == 0 {
		return 0, nil
	}
	minOff := c.cl.MinPhyOffset()
	hi := maxOff
	for {
		lo := max((hi-1)-(hi-1)%c.fileSize, minOff)
		ranges, err := walkProbes(c.cl, lo, hi, c.fileSize)
		if err != nil {
			return 0, err
		}
		req := CheckRequest{SlaveMaxOffset: maxOff, Probes: make([]Probe, len(ranges))}
		for i, r := range ranges {
			req.Probes[i] = r.Probe
		}
		resp, err := c.checker.CheckTail(ctx, req)
		if err != nil {
			return 0, err
		}
		if len(resp.Match) != len(ranges) {
			return 0, fmt.Errorf("%w: %d answers for %d probes", errBadFrame, len(resp.Match), len(ranges))
		}
		keep := int64(-1)
		for i, r := range ranges { // ranges are in log order: keep the longest matching run
			if !resp.Match[i] {
				break
			}
			keep = r.keep
		}
		switch {
		case keep == maxOff:
			return 0, nil
		case keep >= 0:
			c.log.Warn("the slave's CommitLog diverged from the master's: truncating it to the last offset both hold",
				"from", maxOff, "to", keep, "dropped", maxOff-keep, "masterMaxOffset", resp.MasterMaxOffset)
			if err := c.cl.TruncateCommitLog(keep); err != nil {
				return 0, fmt.Errorf("ha: truncate the slave's CommitLog to %d: %w", keep, err)
			}
			return maxOff - keep, nil
		case lo <= minOff:
			if maxOff < resp.MasterMinOffset {
				return 0, fmt.Errorf("%w: the slave ends at %d, before the master's oldest CommitLog file starts (%d); wipe the slave's store to resync it",
					errNoCommonOffset, maxOff, resp.MasterMinOffset)
			}
			return 0, fmt.Errorf("%w: no probe between %d and %d matched (master holds %d..%d); refusing to truncate, wipe the slave's store to resync it",
				errNoCommonOffset, minOff, maxOff, resp.MasterMinOffset, resp.MasterMaxOffset)
		}
		hi = lo
	}
}

// walkProbes walks the records of [lo, hi) (lo a record boundary: a file start) and returns
// probes of the first record, the last tailProbes ones and those at exponentially growing
// distances before them, in log order. A record cut by hi is probed as far as it goes.
func walkProbes(cl CommitLog, lo, hi, fileSize int64) ([]probeRange, error) {
	var all []probeRange
	var buf []byte
	var bufFrom int64
	var release func()
	defer func() {
		if release != nil {
			release()
		}
	}()
	for pos := lo; pos < hi; {
		if pos < bufFrom || pos+recordHeader > bufFrom+int64(len(buf)) {
			if release != nil {
				release()
				release = nil
			}
			data, rel, err := cl.ReadCommitLog(pos, walkChunk)
			if err != nil {
				return nil, fmt.Errorf("ha: read the slave's CommitLog at %d: %w", pos, err)
			}
			buf, bufFrom, release = data, pos, rel
		}
		avail := bufFrom + int64(len(buf)) - pos
		if avail < recordHeader || hi-pos < recordHeader { // a torn header at the very end
			all = append(all, probeRange{Probe: Probe{Offset: pos, Size: int32(hi - pos)}, keep: hi})
			break
		}
		h := buf[pos-bufFrom:]
		size := int64(int32(binary.BigEndian.Uint32(h)))
		magic := int32(binary.BigEndian.Uint32(h[4:]))
		fileEnd := pos - pos%fileSize + fileSize
		switch {
		case magic == message.BlankMagicCode && size == fileEnd-pos:
			all = append(all, probeRange{Probe: Probe{Offset: pos, Size: recordHeader}, keep: fileEnd})
		case (magic == message.MessageMagicCode || magic == message.MessageMagicCodeV2) && size > recordHeader && pos+size <= fileEnd:
			end := min(pos+size, hi)
			all = append(all, probeRange{Probe: Probe{Offset: pos, Size: int32(end - pos)}, keep: end})
		default:
			return nil, fmt.Errorf("ha: no record at %d of the slave's CommitLog (size %d, magic 0x%08X)", pos, size, uint32(magic))
		}
		pos = all[len(all)-1].keep
	}
	picked := pickProbes(len(all))
	out := make([]probeRange, len(picked))
	for i, idx := range picked {
		out[i] = all[idx]
		crc, ok := rangeCRC(cl, out[i].Offset, int(out[i].Size))
		if !ok {
			return nil, fmt.Errorf("ha: read %d bytes at %d of the slave's CommitLog", out[i].Size, out[i].Offset)
		}
		out[i].CRC = crc
	}
	return out, nil
}

// pickProbes chooses which of n records to probe: the first, the last tailProbes, and before
// them every record at distance 2^k from the end; ascending.
func pickProbes(n int) []int {
	if n == 0 {
		return nil
	}
	seen := map[int]bool{0: true}
	for i := max(n-tailProbes, 0); i < n; i++ {
		seen[i] = true
	}
	for d := tailProbes; n-1-d > 0; d *= 2 {
		seen[n-1-d] = true
	}
	out := make([]int, 0, len(seen))
	for i := range seen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}
