package remoting

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxFrameSize is the default limit on a frame's length field (the bytes after it): 16 MiB, RocketMQ's
// com.rocketmq.remoting.frameMaxLength default.
const MaxFrameSize = 16 << 20

// Frame layout constants. Wire format: never change.
const (
	lengthFieldSize = 4        // int32 frame length, not counting itself
	headerWordSize  = 4        // serialize type (top byte) + header length (low 24 bits)
	maxHeaderLen    = 0xFFFFFF // the header length is a uint24
)

// Decoding and framing errors. Every error of ReadFrame and DecodeFrame matches one of them with errors.Is.
var (
	// ErrFrameTooLarge: the length field is above the reader's limit.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrBadFrame: a length below the minimum, a header length beyond the frame, an unknown serialize type or a
	// header that does not decode.
	ErrBadFrame = errors.New("remoting: bad frame")
)

func badFrame(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadFrame, fmt.Sprintf(format, args...))
}

// EncodeFrame appends the whole frame of c to dst: the length field, the serialize-type/header-length word, the
// header in c.SerializeType, and c.Body. The length field also counts c.BodyParts, which EncodeFrame does not
// append: the writer sends them after the returned bytes (so the frame is complete only with them).
func EncodeFrame(dst []byte, c *Command) ([]byte, error) {
	dst, err := appendFrameHead(dst, c)
	if err != nil {
		return dst, err
	}
	return append(dst, c.Body...), nil
}

// appendFrameHead appends the length field, the type word and the header: everything but the body. The length
// field counts Body and BodyParts.
func appendFrameHead(dst []byte, c *Command) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch c.SerializeType {
	case SerializeJSON:
		dst = appendJSONHeader(dst, c)
	case SerializeRocketMQ:
		dst, err = appendBinaryHeader(dst, c)
	default:
		err = fmt.Errorf("remoting: unknown serialize type %d", c.SerializeType)
	}
	if err != nil {
		return dst[:start], err
	}
	headerLen := len(dst) - start - lengthFieldSize - headerWordSize
	if headerLen > maxHeaderLen {
		return dst[:start], fmt.Errorf("remoting: header of %d bytes exceeds the %d-byte limit of the frame format",
			headerLen, maxHeaderLen)
	}
	total := int64(headerWordSize) + int64(headerLen) + int64(c.BodyLen())
	if total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("remoting: frame of %d bytes does not fit the int32 length field", total)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+lengthFieldSize:], uint32(c.SerializeType)<<24|uint32(headerLen))
	return dst, nil
}

// DecodeFrame decodes one frame given without its length field. Body aliases frame (nil when empty): the caller
// must not reuse frame while the command is in use. Header strings never alias frame.
func DecodeFrame(frame []byte) (*Command, error) {
	return decodeFrameInto(nil, frame, nil)
}

// decodeFrameInto is DecodeFrame into spare when it is not nil (a command its reader got back: Conn.readLoop),
// with spare's ExtFields map cleared and used again; a binary header is decoded into a new command. A JSON
// header's strings come from intern when it has them all (intern.go; nil: a copy of the header).
func decodeFrameInto(spare *Command, frame []byte, intern Interner) (*Command, error) {
	if len(frame) < headerWordSize {
		return nil, badFrame("frame of %d bytes is shorter than the %d-byte header length field", len(frame),
			headerWordSize)
	}
	word := binary.BigEndian.Uint32(frame)
	serType := byte(word >> 24)
	headerLen := int(word & maxHeaderLen)
	if headerLen > len(frame)-headerWordSize {
		return nil, badFrame("header length %d exceeds the %d bytes left in the frame", headerLen,
			len(frame)-headerWordSize)
	}
	header := frame[headerWordSize : headerWordSize+headerLen]
	var (
		c   *Command
		err error
	)
	switch serType {
	case SerializeJSON:
		if spare != nil {
			resetCommand(spare)
			c, err = spare, decodeJSONHeaderInto(spare, header, intern)
		} else {
			c, err = decodeJSONHeader(header, intern)
		}
	case SerializeRocketMQ:
		c, err = decodeBinaryHeader(header)
	default:
		return nil, badFrame("unknown serialize type %d", serType)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	c.SerializeType = serType
	if body := frame[headerWordSize+headerLen:]; len(body) > 0 {
		c.Body = body[:len(body):len(body)]
	}
	return c, nil
}

// readChunk bounds what ReadFrame allocates ahead of the bytes that have actually arrived: a frame longer than
// this is read in growing pieces, so a peer that announces 16 MiB and sends nothing costs at most readChunk.
const readChunk = 1 << 20

// ReadFrame reads one frame from r and returns it without its length field. The length is checked against
// maxSize before anything is allocated (ErrFrameTooLarge), and must be at least the 4-byte header length field
// (ErrBadFrame). scratch is used for the frame when it is large enough; otherwise a new slice is returned. An
// io.EOF before the first byte is returned as is; a frame cut short is io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxSize int, scratch []byte) ([]byte, error) {
	var lenBuf [lengthFieldSize]byte
	return readFrame(r, maxSize, &lenBuf, scratch, nil)
}

// largeReader reads a frame of size bytes (the length field read already) in readFrame's place: a server's
// connection reads large frames in turns into its frame cache's memory (Conn.readLarge). ok false: readFrame
// reads it as any other.
type largeReader func(r io.Reader, size int) (frame []byte, ok bool, err error)

// readFrame is ReadFrame with the length field's buffer given, and large (nil: none) for frames of more than
// scratch's capacity up to readChunk bytes.
func readFrame(r io.Reader, maxSize int, lenBuf *[lengthFieldSize]byte, scratch []byte, large largeReader) ([]byte, error) {
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := int64(int32(binary.BigEndian.Uint32(lenBuf[:])))
	if n < headerWordSize {
		return nil, badFrame("frame length %d is below the minimum of %d", n, headerWordSize)
	}
	if n > int64(maxSize) {
		if lenBuf[0] == tlsRecordHandshake {
			return nil, fmt.Errorf("%w: frame length %d exceeds the limit of %d bytes: the peer speaks TLS, and TLS is "+
				"not on here (tlsServerMode=disabled, or a plain client)", ErrFrameTooLarge, n, maxSize)
		}
		return nil, fmt.Errorf("%w: frame length %d exceeds the limit of %d bytes", ErrFrameTooLarge, n, maxSize)
	}
	size := int(n)
	if size <= cap(scratch) {
		buf := scratch[:size]
		_, err := io.ReadFull(r, buf)
		return buf, unexpectedEOF(err)
	}
	if size <= readChunk {
		if large != nil {
			if buf, ok, err := large(r, size); ok {
				return buf, unexpectedEOF(err)
			}
		}
		buf := make([]byte, size)
		_, err := io.ReadFull(r, buf)
		return buf, unexpectedEOF(err)
	}
	// Large frame: grow with the data that arrives rather than trusting the length field.
	buf := make([]byte, 0, readChunk)
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*cap(buf), size))
			copy(grown, buf)
			buf = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil {
			return nil, unexpectedEOF(err)
		}
	}
	return buf, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
