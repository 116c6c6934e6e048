package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exampleRequest is a GET_ROUTEINFO_BY_TOPIC request for topic T, pinned below in both header encodings.
func exampleRequest(serType byte) *Command {
	return &Command{Code: 105, Language: "GO", Version: 317, Opaque: 1, ExtFields: map[string]string{"topic": "T"},
		SerializeType: serType}
}

func TestEncodeMatchesProtocolExamples(t *testing.T) {
	header := `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}`
	wantJSON := append(mustHex(t, "00000068 00000064"), header...)
	wantBinary := mustHex(t, "00000025 01000021 0069 09 013d 00000001 00000000 00000000 0000000c 0005 746f706963 "+
		"00000001 54")
	for _, tc := range []struct {
		name string
		cmd  *Command
		want []byte
	}{
		{"json", exampleRequest(SerializeJSON), wantJSON},
		{"binary", exampleRequest(SerializeRocketMQ), wantBinary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EncodeFrame(nil, tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("encoded\n%x\nwant\n%x", got, tc.want)
			}
			back, err := DecodeFrame(got[4:])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tc.cmd) {
				t.Fatalf("decoded %+v, want %+v", back, tc.cmd)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	cmds := []*Command{
		{Code: 10, Language: "GO", Version: 317, Opaque: 7, ExtFields: map[string]string{
			"topic": "TopicTest", "properties": "UNIQ_KEY\x01ABC\x02TAGS\x01a\x02", "queueId": "3",
			"quote": `a"b\c`, "unicode": "héllo \u2028 日本", "ctl": "\x00\x1f\t\r\n"}, Body: []byte("hello")},
		{Code: int32(TopicNotExist), Language: "JAVA", Version: 401, Opaque: -5, Flag: FlagResponse,
			Remark: "No topic route info in name server for the topic: X"},
		{Code: 34, Language: "GO", Version: 0, Opaque: 1 << 30, Flag: FlagOneway, Body: bytes.Repeat([]byte{0}, 300)},
		{Code: -3, Language: "RUST", Version: -1, Opaque: 0, ExtFields: map[string]string{"": ""}},
	}
	for _, serType := range []byte{SerializeJSON, SerializeRocketMQ} {
		for i, c := range cmds {
			c.SerializeType = serType
			frame, err := EncodeFrame(nil, c)
			if err != nil {
				t.Fatalf("type %d cmd %d: %v", serType, i, err)
			}
			if got := int(binary.BigEndian.Uint32(frame)); got != len(frame)-4 {
				t.Fatalf("type %d cmd %d: length field %d, frame after it %d", serType, i, got, len(frame)-4)
			}
			back, err := DecodeFrame(frame[4:])
			if err != nil {
				t.Fatalf("type %d cmd %d: %v", serType, i, err)
			}
			if !reflect.DeepEqual(back, c) {
				t.Fatalf("type %d cmd %d: decoded\n%+v\nwant\n%+v", serType, i, back, c)
			}
		}
	}
}

func TestEncodeCountsBodyParts(t *testing.T) {
	c := NewResponse(Success, "")
	c.Body = []byte("ab")
	c.BodyParts = [][]byte{[]byte("cde"), nil, []byte("f")}
	frame, err := EncodeFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	frame = append(frame, "cdef"...) // what the writer sends after the returned bytes
	back, err := DecodeFrame(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	if string(back.Body) != "abcdef" || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		t.Fatalf("body %q, length field %d for %d bytes", back.Body, binary.BigEndian.Uint32(frame), len(frame)-4)
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmd  *Command
		want string
	}{
		{"binary code beyond int16", &Command{Code: int32(PopMessage), SerializeType: SerializeRocketMQ}, "int16"},
		{"binary version beyond int16", &Command{Code: 1, Version: 40000, SerializeType: SerializeRocketMQ},
			"version 40000"},
		{"unknown serialize type", &Command{SerializeType: 9}, "serialize type 9"},
	} {
		if _, err := EncodeFrame(nil, tc.cmd); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func jsonFrame(header string, body string) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(len(header)))
	return append(append(f, header...), body...)
}

func TestDecodeJSONLeniency(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		want   Command
	}{
		{"null remark and extFields", `{"code":0,"remark":null,"extFields":null,"flag":1}`,
			Command{Flag: 1}},
		{"missing keys", `{}`, Command{}},
		{"language as number", `{"code":1,"language":9}`, Command{Code: 1, Language: "GO"}},
		{"unknown language number", `{"language":99}`, Command{Language: "99"}},
		{"java extras and spaces", " {\n \"code\" : 17 , \"serializeTypeCurrentRPC\" : \"JSON\", " +
			`"x":{"a":[1,{"b":[]},"s",{}],"c":{}}, "y":[[],[[]]], "language":"JAVA", "opaque":-2}  `,
			Command{Code: 17, Language: "JAVA", Opaque: -2}},
		{"ext values: null absent, number and bool as text",
			`{"extFields":{"a":null,"b":12,"c":true,"d":"x","e":-1.5e3}}`,
			Command{ExtFields: map[string]string{"b": "12", "c": "true", "d": "x", "e": "-1.5e3"}}},
		{"escapes", `{"remark":"\u0041\"\\\/\b\f\n\r\t\ud83d\ude00\ud800x"}`,
			Command{Remark: "A\"\\/\b\f\n\r\t\U0001F600\uFFFDx"}},
		{"duplicate key: last wins", `{"code":1,"code":2}`, Command{Code: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeFrame(jsonFrame(tc.header, ""))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	binHeader, _ := appendBinaryHeader(nil, exampleRequest(SerializeRocketMQ))
	binFrame := func(h []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(h))), h...)
	}
	corrupt := func(at int, b ...byte) []byte {
		h := bytes.Clone(binHeader)
		copy(h[at:], b)
		return binFrame(h)
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		want  string
	}{
		{"too short", []byte{0, 0}, "shorter than"},
		{"header length beyond frame", mustHex(t, "00000010 7b7d"), "header length 16"},
		{"unknown serialize type", mustHex(t, "05000002 7b7d"), "serialize type 5"},
		{"empty json", jsonFrame("", ""), "end of JSON"},
		{"quoted code", jsonFrame(`{"code":"105"}`, ""), "code must be a number"},
		{"code beyond int32", jsonFrame(`{"code":4294967296}`, ""), "not an int32"},
		{"fraction opaque", jsonFrame(`{"opaque":1.5}`, ""), "not an int32"},
		{"trailing garbage", jsonFrame(`{}x`, ""), "trailing"},
		{"unterminated string", jsonFrame(`{"remark":"abc`, ""), "end of JSON"},
		{"bad escape", jsonFrame(`{"remark":"\q"}`, ""), "escape"},
		{"object ext value", jsonFrame(`{"extFields":{"a":{}}}`, ""), "must be a string"},
		{"missing colon", jsonFrame(`{"code" 1}`, ""), "want ':'"},
		{"deep unknown", jsonFrame(`{"x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`, ""), "deeper"},
		{"binary truncated", binFrame(binHeader[:10]), "fixed part"},
		{"binary negative remark", corrupt(13, 0xff, 0xff, 0xff, 0xff), "negative remark"},
		{"binary remark too long", corrupt(13, 0, 0, 1, 0), "remark needs 256"},
		{"binary ext too long", corrupt(17, 0, 0, 0, 99), "extFields needs 99"},
		{"binary ext short", corrupt(17, 0, 0, 0, 2), "bytes after extFields"},
		{"binary key too long", corrupt(21, 0x7f, 0), "key needs"},
		{"binary value negative", corrupt(28, 0x80, 0, 0, 0), "negative extFields value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeFrame(tc.frame)
			if !errors.Is(err, ErrBadFrame) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrBadFrame containing %q", err, tc.want)
			}
		})
	}
}

func TestReadFrame(t *testing.T) {
	frame, _ := EncodeFrame(nil, exampleRequest(SerializeJSON))
	t.Run("two frames and EOF", func(t *testing.T) {
		r := bytes.NewReader(append(bytes.Clone(frame), frame...))
		scratch := make([]byte, 0, 512)
		for i := 0; i < 2; i++ {
			got, err := ReadFrame(r, MaxFrameSize, scratch)
			if err != nil || !bytes.Equal(got, frame[4:]) {
				t.Fatalf("frame %d: %q, %v", i, got, err)
			}
		}
		if _, err := ReadFrame(r, MaxFrameSize, scratch); err != io.EOF {
			t.Fatalf("after the last frame: %v, want io.EOF", err)
		}
	})
	for _, tc := range []struct {
		name  string
		input []byte
		want  error
		text  string
	}{
		{"too large", mustHex(t, "01000001"), ErrFrameTooLarge, "16777217 exceeds the limit of 16777216"},
		{"negative", mustHex(t, "ffffffff"), ErrBadFrame, "-1 is below"},
		{"too short", mustHex(t, "00000003"), ErrBadFrame, "3 is below"},
		{"cut short", frame[:20], io.ErrUnexpectedEOF, ""},
		{"length cut short", frame[:2], io.ErrUnexpectedEOF, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tc.input), MaxFrameSize, nil)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("error %v, want %v containing %q", err, tc.want, tc.text)
			}
		})
	}
	t.Run("large frame", func(t *testing.T) {
		c := NewRequest(SendMessage, nil, bytes.Repeat([]byte("x"), 5*readChunk+3))
		big, _ := EncodeFrame(nil, c)
		got, err := ReadFrame(bytes.NewReader(big), MaxFrameSize, nil)
		if err != nil || !bytes.Equal(got, big[4:]) {
			t.Fatalf("large frame: %d bytes, %v", len(got), err)
		}
	})
}

// A peer that announces a 15 MiB frame and sends 100 bytes must not make the reader allocate 15 MiB.
func TestReadFrameDoesNotTrustTheLength(t *testing.T) {
	input := append(binary.BigEndian.AppendUint32(nil, 15<<20), make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(input), MaxFrameSize, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error %v, want io.ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 2*readChunk {
		t.Fatalf("allocated %d bytes for 100 bytes of input", grew)
	}
}

func TestHeaderAccessors(t *testing.T) {
	c := NewRequest(PullMessage, map[string]string{"queueId": "3", "queueOffset": "9000000000", "bad": "x",
		"sysFlag": "", "flagT": "TRUE", "flagF": "false", "big": "3000000000"}, nil)
	if v, err := c.ExtInt32("queueId"); err != nil || v != 3 {
		t.Fatalf("queueId %d %v", v, err)
	}
	if v, err := c.ExtInt64("queueOffset"); err != nil || v != 9000000000 {
		t.Fatalf("queueOffset %d %v", v, err)
	}
	if v, err := c.ExtBool("flagT"); err != nil || !v {
		t.Fatalf("flagT %v %v", v, err)
	}
	if v, err := c.OptBool("flagF", true); err != nil || v {
		t.Fatalf("flagF %v %v", v, err)
	}
	if v, err := c.OptInt32("sysFlag", 7); err != nil || v != 7 {
		t.Fatalf("empty sysFlag %d %v", v, err)
	}
	if v, err := c.OptInt64("absent", -1); err != nil || v != -1 {
		t.Fatalf("absent %d %v", v, err)
	}
	if c.OptString("absent", "d") != "d" {
		t.Fatal("OptString default")
	}
	for _, tc := range []struct {
		err  error
		text string
	}{
		{func() error { _, err := c.ExtString("topic"); return err }(), "missing header field topic"},
		{func() error { _, err := c.ExtInt32("big"); return err }(), `header field big: "3000000000" is not a valid int32`},
		{func() error { _, err := c.OptInt64("bad", 0); return err }(), `header field bad: "x" is not a valid int64`},
		{func() error { _, err := c.ExtBool("queueId"); return err }(), `header field queueId: "3" is not a valid bool`},
	} {
		if !errors.Is(tc.err, ErrHeaderField) || tc.err.Error() != tc.text {
			t.Errorf("error %v, want %q", tc.err, tc.text)
		}
	}
}

func TestCodeNames(t *testing.T) {
	if SendMessage.String() != "SEND_MESSAGE" || TopicNotExist.String() != "TOPIC_NOT_EXIST" ||
		RequestCode(9999).String() != "9999" || LanguageGo.String() != "GO" || ResponseCode(209).String() !=
		"UPDATE_AND_CREATE_ACL_CONFIG_FAILED" {
		t.Fatal("code names")
	}
	if l, ok := ParseLanguage("NODE_JS"); !ok || l != LanguageNodeJS {
		t.Fatal("ParseLanguage")
	}
	if NewRequest(HeartBeat, nil, nil).Opaque == NewRequest(HeartBeat, nil, nil).Opaque {
		t.Fatal("opaques repeat")
	}
}

func BenchmarkEncodeSendHeader(b *testing.B) {
	c := sendLikeRequest()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = EncodeFrame(buf[:0], c)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeSendHeader(b *testing.B) {
	frame, _ := EncodeFrame(nil, sendLikeRequest())
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := DecodeFrame(frame[4:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSendHeaderBinary: the same request with the ROCKETMQ binary header (the native
// client's, and the official Java client's by default).
func BenchmarkDecodeSendHeaderBinary(b *testing.B) {
	c := sendLikeRequest()
	c.SerializeType = SerializeRocketMQ
	frame, err := EncodeFrame(nil, c)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := DecodeFrame(frame[4:]); err != nil {
			b.Fatal(err)
		}
	}
}

// sendLikeRequest is a SEND_MESSAGE as the Go client builds it, with a 1 KiB body.
func sendLikeRequest() *Command {
	return NewRequest(SendMessage, map[string]string{
		"producerGroup": "PG", "topic": "TopicTest", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "1", "sysFlag": "0", "bornTimestamp": "1700000000000", "flag": "0",
		"properties": "UNIQ_KEY\x017F0000010001000000000000000001\x02WAIT\x01true\x02", "reconsumeTimes": "0",
		"unitMode": "false", "maxReconsumeTimes": "0", "batch": "false", "bname": "broker-a"},
		bytes.Repeat([]byte("m"), 1024))
}
