package remoting

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	jsoniter "github.com/json-iterator/go"
)

// goClientLanguage and goClientCommand mirror the official Go client's RemotingCommand (internal/remote/codec.go,
// which cannot be imported): the same field types, tags and jsoniter, so its frames and its strictness when
// decoding can be reproduced here.
type goClientLanguage byte

func (goClientLanguage) MarshalJSON() ([]byte, error) { return []byte(`"GO"`), nil }

func (l *goClientLanguage) UnmarshalJSON(b []byte) error { *l = 9; return nil }

type goClientCommand struct {
	Code      int16             `json:"code"`
	Language  goClientLanguage  `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
	Body      []byte            `json:"-"`
}

// goClientFrame builds a frame the way the Go client's encode does: jsoniter header, JSON serialize type.
func goClientFrame(t *testing.T, c *goClientCommand) []byte {
	t.Helper()
	header, err := jsoniter.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(c.Body)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(header)))
	return append(append(frame, header...), c.Body...)
}

func TestDecodeGoClientFrames(t *testing.T) {
	for _, c := range []*goClientCommand{
		{Code: 105, Version: 317, Opaque: 1, ExtFields: map[string]string{"topic": "TopicTest"}},
		{Code: 34, Version: 317, Opaque: 2, ExtFields: map[string]string{},
			Body: []byte(`{"clientID":"10.0.0.1@1","producerDataSet":[{"groupName":"PG"}]}`)},
		{Code: 10, Version: 317, Opaque: 3, ExtFields: sendLikeRequest().ExtFields, Body: []byte("body")},
		{Code: 11, Version: 317, Opaque: 4, Remark: "<&> \u2028", ExtFields: map[string]string{"subscription": "a || b"}},
		{Code: 40, Version: 317, Opaque: 5, Flag: 1, ExtFields: nil}, // a response with "extFields":null
	} {
		frame := goClientFrame(t, c)
		got, err := DecodeFrame(frame[4:])
		if err != nil {
			t.Fatalf("code %d: %v", c.Code, err)
		}
		want := &Command{Code: int32(c.Code), Language: "GO", Version: 317, Opaque: c.Opaque, Flag: c.Flag,
			Remark: c.Remark, ExtFields: c.ExtFields}
		if len(want.ExtFields) == 0 {
			want.ExtFields = nil
		}
		if len(c.Body) > 0 {
			want.Body = c.Body
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("code %d: decoded\n%+v\nwant\n%+v", c.Code, got, want)
		}
	}
}

// Our frames must pass the Go client's decode: jsoniter into int16 code/version and string-only extFields.
func TestGoClientDecodesOurFrames(t *testing.T) {
	resp := NewResponse(TopicNotExist, "No topic route info in name server for the topic: \"X\"\n")
	resp.Opaque = 77
	resp.SetExt("queueId", "1").SetExt("msgId", "0A00000500002A9F00000000000004D2")
	resp.Body = []byte{1, 2, 3}
	frame, err := EncodeFrame(nil, resp)
	if err != nil {
		t.Fatal(err)
	}
	headerLen := binary.BigEndian.Uint32(frame[4:]) & maxHeaderLen
	var got goClientCommand
	if err := jsoniter.Unmarshal(frame[8:8+headerLen], &got); err != nil {
		t.Fatalf("the Go client's decoder refuses our header: %v", err)
	}
	if got.Code != int16(TopicNotExist) || got.Version != 317 || got.Opaque != 77 || got.Flag != 1 ||
		got.Remark != resp.Remark || !reflect.DeepEqual(got.ExtFields, resp.ExtFields) {
		t.Fatalf("the Go client reads %+v", got)
	}
	if !bytes.Equal(frame[8+headerLen:], resp.Body) {
		t.Fatal("body")
	}
}
