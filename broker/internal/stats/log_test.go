package stats

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The stats.log lines: one per item that was ever counted, sorted, with what it counted since the previous
// Write (SUM), per second of that time (TPS) and per call (AVGPT); an idle item prints SUM 0.
func TestLogWriterLines(t *testing.T) {
	s := New("DefaultCluster")
	var out bytes.Buffer
	w := s.NewLogWriter(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}})))
	s.RecordPut("T", Normal, 3, 300)
	s.RecordPut("T", Normal, 1, 100)
	s.RecordGet("T", "G", 0, 4, 400, 4)
	w.Write(s.Boot().Add(2 * time.Second))
	want := []string{
		`msg="[BROKER_GET_NUMS] [DefaultCluster] Stats In One Minute, SUM: 4 TPS: 2.00 AVGPT: 0.00"`,
		`msg="[BROKER_PUT_NUMS] [DefaultCluster] Stats In One Minute, SUM: 4 TPS: 2.00 AVGPT: 0.00"`,
		`msg="[GROUP_GET_NUMS] [T@G] Stats In One Minute, SUM: 4 TPS: 2.00 AVGPT: 4.00"`,
		`msg="[GROUP_GET_SIZE] [T@G] Stats In One Minute, SUM: 400 TPS: 200.00 AVGPT: 400.00"`,
		`msg="[TOPIC_PUT_NUMS] [T] Stats In One Minute, SUM: 4 TPS: 2.00 AVGPT: 2.00"`,
		`msg="[TOPIC_PUT_SIZE] [T] Stats In One Minute, SUM: 400 TPS: 200.00 AVGPT: 200.00"`,
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("first minute:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	out.Reset()
	s.RecordPut("T", Normal, 1, 100)
	w.Write(s.Boot().Add(62 * time.Second))
	lines := out.String()
	for _, l := range []string{`[TOPIC_PUT_NUMS] [T] Stats In One Minute, SUM: 1 TPS: 0.02 AVGPT: 1.00`,
		`[GROUP_GET_NUMS] [T@G] Stats In One Minute, SUM: 0 TPS: 0.00 AVGPT: 0.00`} {
		if !strings.Contains(lines, l) {
			t.Errorf("second minute: no line %q in\n%s", l, lines)
		}
	}
}
