package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// RegisterBrokerBody is REGISTER_BROKER's body (RegisterBrokerBody.java): JSON, or the compressed form
// below. Wire format: never rename a tag.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// Limits on a compressed RegisterBrokerBody, so that a small body cannot inflate into unbounded memory.
const (
	maxInflatedBody = 64 << 20
	maxTopicCount   = 1 << 20
)

// DecodeRegisterBrokerBody decodes REGISTER_BROKER's body: JSON, or with compressed the zlib form of
// RegisterBrokerBody.encode(true): int32 length + DataVersion JSON, int32 topic count, per topic int32 length +
// "name read write perm filterType [attributesJSON]", int32 length + filter server list JSON (5.x queue
// mappings after it are ignored). An empty body is an empty table with version 0/0.
func DecodeRegisterBrokerBody(body []byte, compressed bool) (RegisterBrokerBody, error) {
	var rb RegisterBrokerBody
	if len(body) == 0 {
		return rb, nil
	}
	if !compressed {
		if err := json.Unmarshal(body, &rb); err != nil {
			return rb, fmt.Errorf("register broker body: %w", err)
		}
		return rb, nil
	}
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return rb, fmt.Errorf("compressed register broker body: %w", err)
	}
	defer zr.Close()
	r := &inflated{r: io.LimitReader(zr, maxInflatedBody)}
	dv := r.chunk("dataVersion")
	if r.err == nil {
		if err := json.Unmarshal(dv, &rb.TopicConfigSerializeWrapper.DataVersion); err != nil {
			return rb, fmt.Errorf("compressed register broker body: dataVersion: %w", err)
		}
	}
	n := r.int32("topic count")
	if r.err == nil && (n < 0 || n > maxTopicCount) {
		return rb, fmt.Errorf("compressed register broker body: topic count %d out of range 0..%d", n, maxTopicCount)
	}
	table := make(map[string]*TopicConfig)
	for i := int32(0); r.err == nil && i < n; i++ {
		line := r.chunk("topic config")
		if r.err != nil {
			break
		}
		tc, err := parseTopicConfigLine(string(line))
		if err != nil {
			return rb, fmt.Errorf("compressed register broker body: topic %d: %w", i, err)
		}
		table[tc.TopicName] = &tc
	}
	filters := r.chunk("filterServerList")
	if r.err != nil {
		return rb, fmt.Errorf("compressed register broker body: %w", r.err)
	}
	if len(filters) > 0 {
		_ = json.Unmarshal(filters, &rb.FilterServerList) // Java ignores a bad list too
	}
	rb.TopicConfigSerializeWrapper.TopicConfigTable = table
	return rb, nil
}

// parseTopicConfigLine parses TopicConfig.encode(): "name read write perm filterType [attributesJSON]".
func parseTopicConfigLine(line string) (TopicConfig, error) {
	parts := strings.SplitN(line, " ", 6)
	if len(parts) < 5 {
		return TopicConfig{}, fmt.Errorf("%q has %d space-separated fields, want at least 5", line, len(parts))
	}
	tc := TopicConfig{TopicName: parts[0], TopicFilterType: parts[4]}
	for i, dst := range []*int32{&tc.ReadQueueNums, &tc.WriteQueueNums, &tc.Perm} {
		v, err := strconv.ParseInt(parts[i+1], 10, 32)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("%q: field %d is not an integer", line, i+2)
		}
		*dst = int32(v)
	}
	if tc.TopicFilterType != "SINGLE_TAG" && tc.TopicFilterType != "MULTI_TAG" { // TopicFilterType.valueOf in Java
		return TopicConfig{}, fmt.Errorf("%q: filter type %q is neither SINGLE_TAG nor MULTI_TAG", line, tc.TopicFilterType)
	}
	return tc, nil
}

// smallChunk is the largest chunk read into a buffer of the length it announces (larger ones grow with
// what arrives).
const smallChunk = 4 << 10

// inflated reads length-prefixed chunks from the inflated stream; the first error sticks.
type inflated struct {
	r   io.Reader
	err error
}

func (in *inflated) int32(what string) int32 {
	if in.err != nil {
		return 0
	}
	var b [4]byte
	if _, err := io.ReadFull(in.r, b[:]); err != nil {
		in.err = fmt.Errorf("%s: %w", what, err)
		return 0
	}
	return int32(binary.BigEndian.Uint32(b[:]))
}

func (in *inflated) chunk(what string) []byte {
	n := in.int32(what + " length")
	if in.err != nil {
		return nil
	}
	if n < 0 || n > maxInflatedBody {
		in.err = fmt.Errorf("%s length %d out of range", what, n)
		return nil
	}
	if n <= smallChunk { // a topic line, a data version: read in place
		buf := make([]byte, n)
		m, err := io.ReadFull(in.r, buf)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("%d of %d bytes: %w", m, n, io.ErrUnexpectedEOF)
			}
			in.err = fmt.Errorf("%s: %w", what, err)
			return nil
		}
		return buf
	}
	// Read through a growing buffer: the inflated stream, not the length field, bounds the allocation.
	var buf bytes.Buffer
	m, err := io.CopyN(&buf, in.r, int64(n))
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%d of %d bytes: %w", m, n, io.ErrUnexpectedEOF)
		}
		in.err = fmt.Errorf("%s: %w", what, err)
		return nil
	}
	return buf.Bytes()
}

// EncodeRegisterBrokerBodyCompressed encodes rb in the compressed form DecodeRegisterBrokerBody reads (as Java's
// RegisterBrokerBody.encode(true) writes it, without 5.x queue mappings).
func EncodeRegisterBrokerBodyCompressed(rb RegisterBrokerBody) ([]byte, error) {
	var out bytes.Buffer
	zw, err := zlib.NewWriterLevel(&out, zlib.BestCompression)
	if err != nil {
		return nil, err
	}
	writeChunk := func(b []byte) {
		_ = binary.Write(zw, binary.BigEndian, int32(len(b)))
		_, _ = zw.Write(b)
	}
	dv, err := json.Marshal(rb.TopicConfigSerializeWrapper.DataVersion)
	if err != nil {
		return nil, err
	}
	writeChunk(dv)
	table := rb.TopicConfigSerializeWrapper.TopicConfigTable
	_ = binary.Write(zw, binary.BigEndian, int32(len(table)))
	for _, tc := range table {
		if tc == nil {
			tc = &TopicConfig{}
		}
		filter := tc.TopicFilterType
		if filter == "" {
			filter = "SINGLE_TAG"
		}
		writeChunk(fmt.Appendf(nil, "%s %d %d %d %s", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm,
			filter))
	}
	filters := rb.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	fl, err := json.Marshal(filters)
	if err != nil {
		return nil, err
	}
	writeChunk(fl)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
