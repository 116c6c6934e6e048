package remoting

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"unsafe"
)

// internOf interns the strings of known.
func internOf(known ...string) Interner {
	m := map[string]string{}
	for _, s := range known {
		m[s] = s
	}
	return func(s string) (string, bool) {
		v, ok := m[s]
		return v, ok
	}
}

// scribble overwrites a frame's memory, as the reader's next frame does.
func scribble(frame []byte) {
	for i := range frame {
		frame[i] = 'X'
	}
}

// TestInternedHeadersDecodeInPlace: random JSON headers (extFields keys and values known to the interner,
// common, unknown, escaped, numbers; languages by name and by number; remarks) decode with an Interner to
// the command they decode to without one, and no string of it changes when the frame's memory is written
// over afterwards; a header whose strings are all known keeps the interner's own strings.
func TestInternedHeadersDecodeInPlace(t *testing.T) {
	known := []string{"TopicA", "TopicB", "%RETRY%g1", "weird key"}
	intern := internOf(known...)
	values := append([]string{"topic", "GO", "", "0", "unknown-topic", "esc\"aped", "tab\tbed", "日本", "12345"}, known...)
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func() string { return values[rng.IntN(len(values))] }
	inPlace := 0
	var spare *Command
	for i := range 3000 {
		cmd := NewRequest(GetRouteInfoByTopic, nil, nil)
		cmd.Opaque = int32(i)
		cmd.Language = []string{"GO", "JAVA", "RUST", "Lisp"}[rng.IntN(4)]
		if rng.IntN(3) == 0 {
			cmd.Remark = pick()
		}
		if n := rng.IntN(4); n > 0 {
			cmd.ExtFields = map[string]string{}
			for range n {
				cmd.ExtFields[pick()] = pick()
			}
		}
		frame, err := EncodeFrame(nil, cmd)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeFrameInto(nil, append([]byte(nil), frame[lengthFieldSize:]...), nil)
		if err != nil {
			t.Fatal(err)
		}
		body := frame[lengthFieldSize:]
		if i%2 == 0 && spare != nil { // a reader's command decoded into again
			cmd = spare
		} else {
			cmd = nil
		}
		got, err := decodeFrameInto(cmd, body, intern)
		if err != nil {
			t.Fatal(err)
		}
		scribble(body)
		if len(got.ExtFields) == 0 && len(want.ExtFields) == 0 { // a reader's command keeps its empty map
			got.ExtFields, want.ExtFields = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("header %d: decoded in place %+v, from a copy %+v", i, got, want)
		}
		if v, ok := got.ExtFields["topic"]; ok && v == "TopicA" && len(got.ExtFields) == 1 {
			inPlace++
		}
		spare = got
	}
	if inPlace == 0 {
		t.Fatal("no header had only the topic TopicA: the test did not try the case it is for")
	}
	// A route query for a known topic keeps the interner's string itself.
	topic := "TopicB"
	intern = func(s string) (string, bool) { return topic, s == topic }
	frame, _ := EncodeFrame(nil, NewRequest(GetRouteInfoByTopic, map[string]string{"topic": "TopicB"}, nil))
	got, err := decodeFrameInto(nil, frame[lengthFieldSize:], intern)
	if err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(got.ExtFields["topic"]) != unsafe.StringData(topic) {
		t.Fatal("the topic is not the interner's string")
	}
}

// TestInternedRouteQueryAllocatesNothing: a route query decoded into a reader's command again, with the
// topic interned, allocates nothing (without an Interner it allocates the header's copy).
func TestInternedRouteQueryAllocatesNothing(t *testing.T) {
	topics := make([]string, 100)
	for i := range topics {
		topics[i] = "FleetTopic_" + strconv.Itoa(i)
	}
	intern := internOf(topics...)
	frames := make([][]byte, len(topics))
	for i, tp := range topics {
		cmd := NewRequest(GetRouteInfoByTopic, map[string]string{"topic": tp}, nil)
		cmd.Language = "JAVA"
		f, _ := EncodeFrame(nil, cmd)
		frames[i] = f[lengthFieldSize:]
	}
	spare, _ := decodeFrameInto(nil, frames[0], intern)
	for _, tc := range []struct {
		intern Interner
		want   float64
	}{{intern, 0}, {nil, 1}} {
		i := 0
		got := testing.AllocsPerRun(1000, func() {
			i++
			c, err := decodeFrameInto(spare, frames[i%len(frames)], tc.intern)
			if err != nil || c != spare {
				t.Fatal(err)
			}
		})
		if got != tc.want {
			t.Fatalf("interner %t: %v allocations per route query, want %v", tc.intern != nil, got, tc.want)
		}
	}
}
