package remoting

import "errors"

// Header strings without a copy. Decoding a JSON header copies it into one string and slices every field
// from that copy, one allocation a request. A name server answers tens of thousands of route queries a
// second whose strings it has already: "topic", "GO" or "JAVA", and a topic name its route table holds. A
// server given an Interner (Server.SetInterner) first decodes a JSON header in place, taking each string
// it keeps (the language, the remark, every extFields key and value) from commonStrings or the Interner;
// when one is found in neither, it decodes the header again from a copy, as without an Interner. A string
// is never kept pointing into the frame's memory, which the reader reuses for the next frame.

// Interner returns the string equal to s that its owner keeps (s itself must not be kept: it points into
// a frame's memory), or false. It is called from connections' readers at once and must not block.
type Interner func(s string) (string, bool)

// errNotInterned ends a decode in place: a string to keep was not found.
var errNotInterned = errors.New("remoting: header string not interned")

// commonStrings are the keys and values most requests carry. Read only.
var commonStrings = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"", "topic", "GO", "JAVA", "CPP", "DOTNET", "PYTHON", "RUST", "OTHER", "true", "false",
		"0", "1", "brokerName", "brokerAddr", "clusterName", "brokerId", "consumerGroup", "producerGroup", "queueId",
		"namespace", "acceptStandardJsonOnly", "bname", "lo"} {
		m[s] = s
	}
	return m
}()

// keep returns the string to keep for v, a string of the header: v itself when the scanner decodes a copy,
// else the common or interned string equal to it (errNotInterned when there is none).
func (p *jsonScanner) keep(v string) (string, error) {
	if p.intern == nil {
		return v, nil
	}
	if s, ok := commonStrings[v]; ok {
		return s, nil
	}
	if s, ok := p.intern(v); ok {
		return s, nil
	}
	return "", errNotInterned
}
