package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Frame sizes of the HA port (RocketMQ 4.x HAConnection / HAClient). Wire format: never change.
const (
	// ReportSize is the slave's only frame: its CommitLog max offset, int64 big-endian.
	ReportSize = 8
	// HeaderSize is the master's transfer header: physical offset int64, body size int32.
	HeaderSize = 12
)

// maxBodySize bounds the body a slave accepts in one transfer frame. RocketMQ masters send at
// most haTransferBatchSize (32 KiB by default); anything near this is a broken peer.
const maxBodySize = 64 << 20

// errBadFrame is wrapped when a peer sends a frame that cannot be right.
var errBadFrame = errors.New("ha: bad frame")

func putReport(b []byte, offset int64) { binary.BigEndian.PutUint64(b, uint64(offset)) }

func putHeader(b []byte, offset int64, size int) {
	binary.BigEndian.PutUint64(b, uint64(offset))
	binary.BigEndian.PutUint32(b[8:], uint32(int32(size)))
}

// parseHeader decodes a transfer header and checks its fields.
func parseHeader(b []byte) (offset int64, size int, err error) {
	offset = int64(binary.BigEndian.Uint64(b))
	size = int(int32(binary.BigEndian.Uint32(b[8:])))
	if offset < 0 || size < 0 || size > maxBodySize {
		return 0, 0, fmt.Errorf("%w: transfer header offset %d size %d", errBadFrame, offset, size)
	}
	return offset, size, nil
}
