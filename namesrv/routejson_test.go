package namesrv

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// TestAppendJSONString: strings of printable ASCII, of the characters encoding/json escapes, of control
// bytes, of multi-byte and invalid UTF-8 come out as encoding/json writes them.
func TestAppendJSONString(t *testing.T) {
	cases := []string{"", "broker-a", "10.0.0.1:10911", `a"b`, `a\b`, "<x>&y", "tab\there", "nl\n", "\x00\x1f\x7f",
		"é", "日本", "\u2028\u2029", "\xff\xfe", "a\xc3"}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("aZ09-_.:<>&\"\\\x01\n\x7f\xc3\xa9\xe2\x80\xa8\xff ")
	for range 2000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, _ := json.Marshal(s)
		if got := appendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("%q: got %s, encoding/json %s", s, got[1:], want)
		}
	}
}

// TestAppendBrokerAddrs: broker id maps (ids of one and two digits, negative, none, nil) come out as
// encoding/json writes them, keys sorted as text ("10" before "2").
func TestAppendBrokerAddrs(t *testing.T) {
	for _, m := range []map[int64]string{nil, {}, {0: "a:1"}, {0: "a:1", 1: "b:2", 2: "c:3"},
		{2: "c", 10: "k", 1: "b", 0: "a", 11: "l", -1: "neg", 100: "h"}, {3: "x<y"}} {
		want, _ := json.Marshal(m)
		if got := appendBrokerAddrs(nil, m); !bytes.Equal(got, want) {
			t.Fatalf("%v: got %s, encoding/json %s", m, got, want)
		}
	}
}
