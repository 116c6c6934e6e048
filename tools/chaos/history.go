package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// The history files of a run, in its output folder. Each is JSON lines, one record a line, appended as
// things happen, so a run that failed or was interrupted can be inspected and checked again
// (mqchaos check DIR).
const (
	SendsFile  = "sends.jsonl"  // SendRecord: every send attempt, with its outcome
	ReadsFile  = "reads.jsonl"  // ReadRecord: every message a consumer or a scan read
	FaultsFile = "faults.jsonl" // FaultRecord: every fault, with its start and end
	RunFile    = "run.json"     // RunInfo: what was run
	ReportFile = "report.txt"   // the checker's report
)

// Send outcomes.
const (
	SendOK       = "ok"       // SUCCESS: acknowledged
	SendRejected = "rejected" // answered with another code (FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE, ...)
	SendFailed   = "failed"   // no answer: connection refused or broken; the message may or may not be stored
	SendTimeout  = "timeout"  // no answer in time; the message may or may not be stored
)

// SendRecord is one send attempt. Times are Unix microseconds.
type SendRecord struct {
	ID      string `json:"id"`     // the message's unique id: w<worker>-<seq>
	Worker  int    `json:"worker"` // producer goroutine; each sends to its own queue, in seq order
	Seq     int64  `json:"seq"`
	Attempt int    `json:"attempt"` // 1 for the first send of the id, 2 and up for retries
	Queue   int32  `json:"queue"`
	Node    string `json:"node"` // the broker it went to
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
	Status  string `json:"status"`
	Code    int32  `json:"code,omitempty"`   // the answer's code when there was one
	Offset  int64  `json:"offset,omitempty"` // queue offset of an acknowledged send
	Error   string `json:"error,omitempty"`
}

// Read phases.
const (
	PhaseRun   = "run"    // a consumer, during the run
	PhaseFinal = "final"  // the scan of every queue of a node after the run, all faults healed
	PhaseKill  = "outage" // the scan of the surviving nodes right after the writer was killed
)

// ReadRecord is one message read. Time is Unix microseconds.
type ReadRecord struct {
	Time   int64  `json:"t"`
	Phase  string `json:"phase"`
	Fault  int    `json:"fault,omitempty"` // for PhaseKill: the index of the kill in faults.jsonl
	Node   string `json:"node"`
	Queue  int32  `json:"queue"`
	Offset int64  `json:"offset"`
	ID     string `json:"id"`
}

// FaultRecord is one fault of the schedule. Times are Unix microseconds; Healed is when the fault ended
// (the process restarted or resumed, the link healed).
type FaultRecord struct {
	Index  int    `json:"index"`
	Kind   string `json:"kind"`
	Target string `json:"target"` // node or link
	Start  int64  `json:"start"`
	Healed int64  `json:"healed"`
	Note   string `json:"note,omitempty"`
	// Scanned: the surviving nodes were scanned right after this kill of the writer (PhaseKill reads with
	// this Index); only then does the checker compare them with what was acknowledged.
	Scanned bool `json:"scanned,omitempty"`
}

// RunInfo describes a run, for the report.
type RunInfo struct {
	Mode    string `json:"mode"` // masterslave, or raft once it exists
	Role    string `json:"role"` // brokerRole of the writer
	Flush   string `json:"flush"`
	Durable bool   `json:"durable"` // acknowledged sends must survive every fault (no loss after recovery)
	// Replicated: an acknowledged send is on a follower when acknowledged (SYNC_MASTER; a Raft quorum), so
	// the followers' scan at a writer's kill must hold every send acknowledged before it.
	Replicated bool      `json:"replicated"`
	Queues     int       `json:"queues"`
	Workers    int       `json:"workers"`
	Retries    int       `json:"retries"`
	Schedule   string    `json:"schedule"`
	Nodes      []string  `json:"nodes"`
	Started    time.Time `json:"started"`
	LoadAvg    string    `json:"loadavg,omitempty"`
	Signature  string    `json:"signature,omitempty"` // the command line
	// PopRan: a pop consumer ran beside the pulling ones (pops.jsonl).
	PopRan bool `json:"pop_ran,omitempty"`
	// Set when the run ends:
	Writer  string `json:"writer,omitempty"` // the node whose final scan is the store's content (the writer at the end)
	Drained bool   `json:"drained"`          // the consumers read up to the writer's max offset of every queue
	// PopDrained: the pop consumer got every acknowledged message, and every message it held unacked came back.
	PopDrained bool      `json:"pop_drained,omitempty"`
	Ended      time.Time `json:"ended"`
	Errors     []string  `json:"errors,omitempty"` // what went wrong in the run itself (a restart, the catch-up, a scan)
}

// recorder appends JSON lines to one file; safe for concurrent use.
type recorder struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	err error
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: history %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	return &recorder{f: f, w: w, enc: json.NewEncoder(w)}, nil
}

// add appends v; a nil recorder drops it.
func (r *recorder) add(v any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.enc.Encode(v); err != nil && r.err == nil {
		r.err = err
	}
}

// Close flushes and closes the file and returns the first error of any write.
func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	if err := r.f.Close(); err != nil && r.err == nil {
		r.err = err
	}
	return r.err
}

// readLines decodes every JSON line of path into a T; a missing file is no records.
func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	for {
		var v T
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			// A run killed mid-write leaves a torn last line: keep what came before it.
			return out, fmt.Errorf("chaos: %s: record %d: %w", path, len(out)+1, err)
		}
		out = append(out, v)
	}
}

func micros(t time.Time) int64 { return t.UnixMicro() }
