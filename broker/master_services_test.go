package broker

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// recordingService notes its starts and closes in a shared log.
type recordingService struct {
	name     string
	log      *[]string
	closeErr error
}

func (s *recordingService) Start()       { *s.log = append(*s.log, "start "+s.name) }
func (s *recordingService) Close() error { *s.log = append(*s.log, "close "+s.name); return s.closeErr }

// TestMasterServices: the services start together in order and stop in the reverse order, once each however
// often start and stop are called; the close errors come back wrapped in their service's words; after
// closeForGood nothing starts again (a late Raft leadership event during Close).
func TestMasterServices(t *testing.T) {
	var log []string
	boom := errors.New("disk full")
	var m masterServices
	m.list = []namedService{{"persist a", &recordingService{name: "a", log: &log}},
		{"persist b", &recordingService{name: "b", log: &log, closeErr: boom}}}

	if err := m.stop(); err != nil || len(log) != 0 {
		t.Fatalf("stop before start: %v, %v", err, log)
	}
	m.start()
	m.start()
	err := m.stop()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "persist b: disk full") {
		t.Fatalf("stop: %v, want b's error wrapped as \"persist b: disk full\"", err)
	}
	if err := m.stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	m.start() // leadership back: runs again
	if err := m.closeForGood(); !errors.Is(err, boom) {
		t.Fatalf("closeForGood: %v", err)
	}
	m.start()
	if err := m.closeForGood(); err != nil {
		t.Fatalf("second closeForGood: %v", err)
	}
	want := []string{"start a", "start b", "close b", "close a", "start a", "start b", "close b", "close a"}
	if !slices.Equal(log, want) {
		t.Fatalf("calls %v, want %v", log, want)
	}
}
