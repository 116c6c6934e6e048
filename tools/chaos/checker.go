package chaos

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// History is everything a run recorded: what was run, every send attempt, every message read, every fault.
type History struct {
	Info   RunInfo
	Sends  []SendRecord
	Reads  []ReadRecord
	Faults []FaultRecord
	Pops   []PopRecord
}

// LoadHistory reads the history files of a run's output folder. A torn last line (a run killed mid-write)
// is reported as an error along with the records before it.
func LoadHistory(dir string) (*History, error) {
	h := &History{}
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	if err := json.Unmarshal(b, &h.Info); err != nil {
		return nil, fmt.Errorf("chaos: %s: %w", RunFile, err)
	}
	var errs []error
	if h.Sends, err = readLines[SendRecord](filepath.Join(dir, SendsFile)); err != nil {
		errs = append(errs, err)
	}
	if h.Reads, err = readLines[ReadRecord](filepath.Join(dir, ReadsFile)); err != nil {
		errs = append(errs, err)
	}
	if h.Faults, err = readLines[FaultRecord](filepath.Join(dir, FaultsFile)); err != nil {
		errs = append(errs, err)
	}
	if h.Pops, err = readLines[PopRecord](filepath.Join(dir, PopsFile)); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return h, errs[0]
	}
	return h, nil
}

// Report is the checker's verdict on a history. Lists hold message ids (or "queue/offset" places) and are
// capped at listCap entries in the text; the counts are exact.
type Report struct {
	Info RunInfo

	IDs      int // distinct message ids sent
	Attempts int
	Acked    int // ids acknowledged (SEND_OK) at least once
	Retried  int // ids sent more than once
	Status   map[string]int

	// Lost: acknowledged, and not in the writer's final scan. A failure where Info.Durable.
	Lost []string
	// ReplicaLost: for each kill of the writer, the sends acknowledged before the kill that the followers'
	// scan right after it lacks (what a lost master disk would lose). A failure where Info.Replicated.
	ReplicaLost []OutageLoss
	// Duplicates: extra stored copies (in the writer's final scan) of ids sent more than once: allowed.
	Duplicates int
	// BadDuplicates: ids sent once and stored more than once.
	BadDuplicates []string
	// OrderViolations: acknowledged ids stored (first copy) after a later acknowledged id of the same
	// producer worker in the same queue.
	OrderViolations []string
	// OffsetConflicts: a queue offset read with two different ids (on any node, in any phase), two
	// acknowledgements naming the same queue offset, or an acknowledged offset holding another id.
	OffsetConflicts []string
	// Phantoms: ids read that no send carried.
	Phantoms []string
	// UnackedStored: ids never acknowledged that are stored anyway (fine: the send's outcome was unknown or
	// the broker said "stored, not replicated/flushed").
	UnackedStored int
	// NotConsumed: acknowledged ids the consumers never read (checked only when they drained).
	NotConsumed []string
	// Diverged: queue offsets present in one broker's final scan and not in another's.
	Diverged []string
	// PowerLosses counts the power-loss faults; LossAllowed says the run's flush type does not promise
	// that acknowledged messages survive them (ASYNC_FLUSH: Lost is then reported, not failed).
	PowerLosses int
	LossAllowed bool
	// TailCut: (classic master/slave) queue offsets a slave held with a message never acknowledged, which
	// its master lost unsynced to a power loss or a failed disk, and which went to another message once the
	// slave was cut back to the master (offsetConflict.cutFromFollower). Reported, not failed: nothing
	// acknowledged is missing, but a consumer that read the slave meanwhile may skip the message that took
	// the offset (classic HA ships a record to the slave while the master's flush runs; ha/doc.go).
	TailCut []string
	// DiskFaults counts the disk faults (disk-eio-*, disk-full-*, disk-slow-*). A failed disk drops what
	// its node had not synced, as a power loss does (LossAllowed covers it too).
	DiskFaults int
	// OffsetsReused: with LossAllowed, queue offsets of lost acknowledged messages that later messages
	// took (a consequence of the loss, reported apart from OffsetConflicts; the messages that took them
	// are left out of NotConsumed, as the consumers had moved past those offsets).
	OffsetsReused []string

	// Pop: what the pop consumer (pop.go) got, when one ran.
	Pop *PopReport

	Faults []FaultTiming
	// QuietMaxGap: the longest time between two acknowledgements that overlaps no fault (a fault lasting
	// from its start to the first acknowledgement after its heal): unavailability nothing explains.
	QuietMaxGap time.Duration
}

// OutageLoss is what the followers lacked when the writer was killed.
type OutageLoss struct {
	Fault  int
	Before int // sends acknowledged before the kill
	// LostBefore of them were lost earlier, where the flush type allows it, to a power loss of every
	// node or of a master (no follower could hold them then; see lostToPowerLoss); Missing are the
	// others no follower held.
	LostBefore int
	Missing    []string
}

// FaultTiming is a fault and how writes fared through it.
type FaultTiming struct {
	FaultRecord
	// FirstAck: from the fault's start to the end of the first acknowledged send begun after it (for a kill
	// of the writer: the failover time; for classic master/slave, the master's restart); -1 when none.
	FirstAck time.Duration
	// MaxGap: the longest time without an acknowledgement from the fault's start to the first
	// acknowledgement after it healed.
	MaxGap time.Duration
	// Lost (power-loss faults): the lost acknowledged messages whose acknowledgement came before this
	// fault healed and after the previous power loss healed: what this one lost, as far as the history
	// tells (an acknowledgement during the fault came from a node it was still killing). LostSpan is how
	// long before the fault's start the earliest of them was acknowledged (0 when none, or all during it):
	// the window of writes a power loss took, to hold against flushIntervalCommitLog.
	Lost     int
	LostSpan time.Duration
}

const listCap = 20

// sendInfo is what the sends of one id came to.
type sendInfo struct {
	worker   int
	seq      int64
	attempts int
	acked    bool
	ackedAt  int64 // End of the first ok attempt
}

// Check runs every check on h.
func Check(h *History) *Report {
	r := &Report{Info: h.Info, Status: map[string]int{}}
	sent := map[string]*sendInfo{}
	ackedAt := map[place]string{}
	var conflicts []offsetConflict
	for _, s := range h.Sends {
		r.Attempts++
		r.Status[s.Status]++
		si := sent[s.ID]
		if si == nil {
			si = &sendInfo{worker: s.Worker, seq: s.Seq}
			sent[s.ID] = si
		}
		si.attempts++
		if s.Status == SendOK {
			if !si.acked || s.End < si.ackedAt {
				si.ackedAt = s.End
			}
			si.acked = true
			p := place{s.Queue, s.Offset}
			if other, ok := ackedAt[p]; ok && other != s.ID {
				conflicts = append(conflicts, offsetConflict{text: fmt.Sprintf("%d/%d acknowledged for %s and %s", p.q, p.off, other, s.ID), a: other, b: s.ID})
			}
			ackedAt[p] = s.ID
		}
	}
	r.IDs = len(sent)
	for _, si := range sent {
		if si.acked {
			r.Acked++
		}
		if si.attempts > 1 {
			r.Retried++
		}
	}

	// Every read, every node, every phase: a place holds one id.
	seenAt := map[place]string{}
	seenFirst := map[place]int64{} // when seenAt's id was first read there
	conflictAt := map[place]bool{}
	phantom := map[string]bool{}
	final := map[string]map[place]string{} // node -> its final scan
	consumed := map[string]bool{}
	kills := map[int]map[string]bool{} // fault index -> ids the followers held
	onWriter := map[placedID]bool{}    // read at a place on the writer (the node of the final check)
	for _, rd := range h.Reads {
		p := place{rd.Queue, rd.Offset}
		if rd.Node == h.Info.Writer {
			onWriter[placedID{p, rd.ID}] = true
		}
		if id, ok := seenAt[p]; !ok {
			seenAt[p], seenFirst[p] = rd.ID, rd.Time
		} else if id != rd.ID && !conflictAt[p] {
			conflictAt[p] = true
			conflicts = append(conflicts, offsetConflict{text: fmt.Sprintf("%d/%d read as %s and as %s (%s, %s)", p.q, p.off, id, rd.ID, rd.Node, rd.Phase),
				a: id, b: rd.ID, read: true, p: p, aFirst: seenFirst[p], bFirst: rd.Time})
		}
		if sent[rd.ID] == nil && !phantom[rd.ID] {
			phantom[rd.ID] = true
			r.Phantoms = append(r.Phantoms, fmt.Sprintf("%q at %d/%d on %s", rd.ID, p.q, p.off, rd.Node))
		}
		switch rd.Phase {
		case PhaseRun:
			consumed[rd.ID] = true
		case PhaseFinal:
			if final[rd.Node] == nil {
				final[rd.Node] = map[place]string{}
			}
			final[rd.Node][p] = rd.ID
		case PhaseKill:
			if kills[rd.Fault] == nil {
				kills[rd.Fault] = map[string]bool{}
			}
			kills[rd.Fault][rd.ID] = true
		}
	}
	for p, id := range ackedAt {
		if got, ok := final[h.Info.Writer][p]; ok && got != id {
			conflicts = append(conflicts, offsetConflict{text: fmt.Sprintf("%d/%d acknowledged for %s holds %s", p.q, p.off, id, got), a: id, b: got})
		}
	}

	// The writer's final scan is the store's content.
	stored := final[h.Info.Writer]
	places := slices.SortedFunc(maps.Keys(stored), func(a, b place) int {
		return cmp.Or(cmp.Compare(a.q, b.q), cmp.Compare(a.off, b.off))
	})
	copies := map[string]int{}
	type wq struct {
		w int
		q int32
	}
	lastSeq := map[wq]int64{}
	lastID := map[wq]string{}
	for _, p := range places {
		id := stored[p]
		copies[id]++
		si := sent[id]
		if si == nil || copies[id] > 1 || !si.acked {
			continue
		}
		k := wq{si.worker, p.q}
		if last, ok := lastSeq[k]; ok && si.seq < last {
			r.OrderViolations = append(r.OrderViolations, fmt.Sprintf("%s at %d/%d after %s", id, p.q, p.off, lastID[k]))
		} else {
			lastSeq[k], lastID[k] = si.seq, id
		}
	}
	for _, id := range slices.Sorted(maps.Keys(sent)) {
		si := sent[id]
		n := copies[id]
		switch {
		case n > 1 && si.attempts > 1:
			r.Duplicates += n - 1
		case n > 1:
			r.BadDuplicates = append(r.BadDuplicates, fmt.Sprintf("%s stored %d times, sent once", id, n))
		}
		if si.acked && n == 0 {
			r.Lost = append(r.Lost, id)
		}
		if !si.acked && n > 0 {
			r.UnackedStored++
		}
		if si.acked && h.Info.Drained && !consumed[id] && n > 0 {
			r.NotConsumed = append(r.NotConsumed, id)
		}
	}
	// A power loss that may lose acknowledged messages (ASYNC_FLUSH) may also give their queue offsets to
	// later messages: those conflicts are the loss, counted apart.
	r.PowerLosses, r.LossAllowed = powerLosses(h)
	r.DiskFaults = diskFaults(h)
	lost := map[string]bool{}
	for _, id := range r.Lost {
		lost[id] = true
	}
	reusedBy := map[string]bool{} // the messages that took a lost message's offset
	for _, c := range conflicts {
		if h.Info.Mode == ModeMasterSlave && c.cutFromFollower(stored, h.Faults, func(id string) bool { return sent[id] != nil && sent[id].acked },
			func(id string) bool { return onWriter[placedID{c.p, id}] }) {
			r.TailCut = append(r.TailCut, c.text)
			continue
		}
		if r.LossAllowed && (lost[c.a] || lost[c.b] || c.replacedByPowerLoss(stored, h.Faults)) {
			r.OffsetsReused = append(r.OffsetsReused, c.text)
			reusedBy[c.a], reusedBy[c.b] = !lost[c.a], !lost[c.b]
		} else {
			r.OffsetConflicts = append(r.OffsetConflicts, c.text)
		}
	}
	// A consumer that had read a lost message moved past its offset: the message that took the offset
	// after the loss is never read by it. That is the loss too.
	r.NotConsumed = slices.DeleteFunc(r.NotConsumed, func(id string) bool { return reusedBy[id] })

	// Replicas converge: every broker's final scan holds the same places (the ids are compared above).
	for node, scan := range final {
		if node == h.Info.Writer {
			continue
		}
		for p := range scan {
			if _, ok := stored[p]; !ok {
				r.Diverged = append(r.Diverged, fmt.Sprintf("%d/%d on %s, not on %s", p.q, p.off, node, h.Info.Writer))
			}
		}
		for p := range stored {
			if _, ok := scan[p]; !ok {
				r.Diverged = append(r.Diverged, fmt.Sprintf("%d/%d on %s, not on %s", p.q, p.off, h.Info.Writer, node))
			}
		}
	}
	slices.Sort(r.Diverged)

	// Kills of the writer: what the followers held against what had been acknowledged.
	var acks []int64
	for _, si := range sent {
		if si.acked {
			acks = append(acks, si.ackedAt)
		}
	}
	slices.Sort(acks)
	for _, f := range h.Faults {
		if losesWriter(f.Kind) && f.Scanned {
			held := kills[f.Index]
			ol := OutageLoss{Fault: f.Index}
			for _, id := range slices.Sorted(maps.Keys(sent)) {
				if si := sent[id]; si.acked && si.ackedAt <= f.Start {
					ol.Before++
					switch {
					case held[id]:
					case r.LossAllowed && lost[id] && lostToPowerLoss(h.Info.Mode, si.ackedAt, f.Start, h.Faults):
						ol.LostBefore++
					default:
						ol.Missing = append(ol.Missing, id)
					}
				}
			}
			r.ReplicaLost = append(r.ReplicaLost, ol)
		}
		r.Faults = append(r.Faults, timing(f, h.Sends, acks))
	}
	r.QuietMaxGap = quietGap(acks, h.Faults)
	var lostAt []int64
	for _, id := range r.Lost {
		lostAt = append(lostAt, sent[id].ackedAt)
	}
	attributeLoss(r.Faults, lostAt)
	if h.Info.PopRan {
		r.Pop = checkPops(h, sent, stored)
	}
	return r
}

// PopReport is what the pop consumer got: its deliveries, and against the writer's final scan.
type PopReport struct {
	Deliveries int
	IDs        int // distinct ids delivered
	Held       int // deliveries left unacked on purpose
	AckErrors  int // deliveries whose ack failed (the message comes back)
	// Redelivered counts the deliveries of an id after its first, by what came before each: a held
	// delivery (expected), an acked one (an ack lost to a fault or in a broker's memory at a crash: at least
	// once), one whose ack failed.
	AfterHeld, AfterAcked, AfterAckError int
	// Missing: acknowledged ids in the writer's final scan never delivered (checked when the pop consumer
	// drained).
	Missing []string
	// NotBack: ids held on a delivery and never delivered after it.
	NotBack []string
	// Phantoms: ids delivered that no send carried.
	Phantoms []string
}

// checkPops checks the pop consumer's deliveries: every stored message delivered, every held one back.
func checkPops(h *History, sent map[string]*sendInfo, stored map[place]string) *PopReport {
	pr := &PopReport{}
	last := map[string]PopRecord{} // the previous delivery of each id
	for _, p := range h.Pops {
		pr.Deliveries++
		if p.Held {
			pr.Held++
		}
		if p.AckError != "" {
			pr.AckErrors++
		}
		if sent[p.ID] == nil {
			pr.Phantoms = append(pr.Phantoms, p.ID)
		}
		if prev, ok := last[p.ID]; ok {
			switch {
			case prev.Held:
				pr.AfterHeld++
			case prev.Acked:
				pr.AfterAcked++
			default:
				pr.AfterAckError++
			}
		}
		last[p.ID] = p
	}
	pr.IDs = len(last)
	for _, id := range slices.Sorted(maps.Keys(last)) {
		if last[id].Held {
			pr.NotBack = append(pr.NotBack, id)
		}
	}
	if h.Info.PopDrained {
		missing := map[string]bool{}
		for _, id := range stored {
			if _, ok := last[id]; !ok && sent[id] != nil && sent[id].acked {
				missing[id] = true
			}
		}
		pr.Missing = slices.Sorted(maps.Keys(missing))
	}
	return pr
}

// attributeLoss gives each lost acknowledgement (ack times) to the first power loss or disk failure (the
// kinds that drop what a node had not synced) that healed after it (FaultTiming.Lost).
func attributeLoss(faults []FaultTiming, lostAt []int64) {
	for _, at := range lostAt {
		for i := range faults {
			if f := &faults[i]; dropsUnsynced(f.Kind) && f.Healed > at {
				f.Lost++
				f.LostSpan = max(f.LostSpan, time.Duration(f.Start-at)*time.Microsecond)
				break
			}
		}
	}
}

// placedID is an id at a place.
type placedID struct {
	p  place
	id string
}

// cutFromFollower reports a read conflict that the classic tail cut explains: a, never acknowledged, was
// read at its place on followers only, before a fault that drops what the writer had not synced (a power
// loss of the writer or of every node, a failed disk of the writer) healed, and b, read there only after
// that, is what the writer holds at the end. The master had written a and sent it to its slave (replication
// runs while the master's flush waits for the disk), never synced it, and came back without it; the slave
// was cut back to its master's log at their next connection (ha/doc.go, the tail check), and the offset went
// to b. Nothing acknowledged is missing; a consumer that read a from the slave while the master was out may
// skip b (Report.TailCut).
func (c offsetConflict) cutFromFollower(stored map[place]string, faults []FaultRecord, acked, onWriter func(string) bool) bool {
	if !c.read || stored[c.p] != c.b || acked(c.a) || onWriter(c.a) {
		return false
	}
	for _, f := range faults {
		writer := f.Kind == PowerLossWriter || f.Kind == PowerLossAll || f.Kind == DiskEIOWriter
		if writer && c.aFirst < f.Healed && f.Healed <= c.bFirst {
			return true
		}
	}
	return false
}

// offsetConflict is a queue offset seen with two ids, a and b. For two reads (read), a was first read at
// p at aFirst, b at bFirst.
type offsetConflict struct {
	text           string
	a, b           string
	read           bool
	p              place
	aFirst, bFirst int64
}

// place is a queue offset.
type place struct {
	q   int32
	off int64
}

// replacedByPowerLoss reports two reads of one offset whose first id, a message never acknowledged there
// (or acknowledged and then found elsewhere), was there before a power loss healed and whose second id,
// read there only after it, is what the writer holds at the end: the power loss took a's copy and the
// offset went to b. A failed disk (disk-eio-*) drops what was not synced as a power loss does.
func (c offsetConflict) replacedByPowerLoss(stored map[place]string, faults []FaultRecord) bool {
	if !c.read || stored[c.p] != c.b {
		return false
	}
	for _, f := range faults {
		if dropsUnsynced(f.Kind) && c.aFirst < f.Healed && f.Healed <= c.bFirst {
			return true
		}
	}
	return false
}

// lostToPowerLoss reports an acknowledgement at ackedAt whose loss (a flush type that allows it) an
// earlier power loss (or disk failure) explains: the first to heal after it cut every node, or in
// master/slave mode the writer (its slave then follows the writer's shorter CommitLog, as a
// RocketMQ slave follows its master), and healed before a writer's loss at before. No follower
// can hold such a message at that later loss.
func lostToPowerLoss(mode string, ackedAt, before int64, faults []FaultRecord) bool {
	for _, f := range faults {
		if dropsUnsynced(f.Kind) && f.Healed > ackedAt {
			cut := f.Kind == PowerLossAll || ((f.Kind == PowerLossWriter || f.Kind == DiskEIOWriter) && mode == ModeMasterSlave)
			return cut && f.Healed <= before
		}
	}
	return false
}

// losesWriter reports the fault kinds that take the writer down (its failover, or its restart, follows).
func losesWriter(kind string) bool {
	return kind == KillWriter || kind == PowerLossWriter || kind == PowerLossAll || kind == DiskEIOWriter
}

// powerLosses counts the power-loss faults of h and says whether they, or the disk failures, may lose
// acknowledged messages: with
// ASYNC_FLUSH nothing promises that an acknowledgement is on a disk (a Raft majority holds it in memory,
// which a power loss of every node, or of one while another catches up, may lose).
func powerLosses(h *History) (n int, lossAllowed bool) {
	drops := 0
	for _, f := range h.Faults {
		if isPowerLoss(f.Kind) {
			n++
		}
		if dropsUnsynced(f.Kind) {
			drops++
		}
	}
	return n, drops > 0 && powerLossLoses(h.Info.Flush)
}

// diskFaults counts the disk faults of h.
func diskFaults(h *History) int {
	n := 0
	for _, f := range h.Faults {
		if isDiskFault(f.Kind) {
			n++
		}
	}
	return n
}

// quietGap is the longest gap between consecutive acks (sorted) that overlaps no fault window, a window
// running from a fault's start to the first ack at or after its heal.
func quietGap(acks []int64, faults []FaultRecord) time.Duration {
	type window struct{ from, to int64 }
	var ws []window
	for _, f := range faults {
		to := int64(math.MaxInt64)
		if i, _ := slices.BinarySearch(acks, f.Healed); i < len(acks) {
			to = acks[i]
		}
		ws = append(ws, window{f.Start, to})
	}
	var d time.Duration
	for i := 1; i < len(acks); i++ {
		a, b := acks[i-1], acks[i]
		if slices.ContainsFunc(ws, func(w window) bool { return a < w.to && w.from < b }) {
			continue
		}
		d = max(d, time.Duration(b-a)*time.Microsecond)
	}
	return d
}

// timing measures writes through fault f; acks are the first acknowledgement times of every id, sorted.
func timing(f FaultRecord, sends []SendRecord, acks []int64) FaultTiming {
	ft := FaultTiming{FaultRecord: f, FirstAck: -1}
	first := int64(-1)
	for _, s := range sends {
		if s.Status == SendOK && s.Start >= f.Start && (first < 0 || s.End < first) {
			first = s.End
		}
	}
	if first >= 0 {
		ft.FirstAck = time.Duration(first-f.Start) * time.Microsecond
	}
	// From the fault's start to the first ack after the heal.
	i, _ := slices.BinarySearch(acks, f.Start)
	prev := f.Start // a gap counts from the fault's start at the earliest
	for ; i < len(acks); i++ {
		ft.MaxGap = max(ft.MaxGap, time.Duration(acks[i]-prev)*time.Microsecond)
		prev = acks[i]
		if acks[i] >= f.Healed {
			break
		}
	}
	if i == len(acks) { // no ack after the heal: the gap runs to the heal at least
		ft.MaxGap = max(ft.MaxGap, time.Duration(f.Healed-prev)*time.Microsecond)
	}
	return ft
}

// Failures lists what makes the run FAIL; empty means PASS.
func (r *Report) Failures() []string {
	var out []string
	add := func(cond bool, format string, args ...any) {
		if cond {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	add(r.Info.Durable && !r.LossAllowed && len(r.Lost) > 0, "%d acknowledged messages lost (%s promises none)", len(r.Lost), r.mode())
	if r.Info.Replicated {
		for _, ol := range r.ReplicaLost {
			add(len(ol.Missing) > 0, "fault %d: %d acknowledged messages not on any follower when the writer was killed", ol.Fault, len(ol.Missing))
		}
	}
	add(len(r.BadDuplicates) > 0, "%d duplicates of messages sent once", len(r.BadDuplicates))
	add(len(r.OrderViolations) > 0, "%d per-queue order violations", len(r.OrderViolations))
	add(len(r.OffsetConflicts) > 0, "%d queue offsets used twice", len(r.OffsetConflicts))
	add(len(r.Phantoms) > 0, "%d messages read that were never sent", len(r.Phantoms))
	add(len(r.NotConsumed) > 0, "%d acknowledged messages the consumers never read", len(r.NotConsumed))
	add(len(r.Diverged) > 0, "%d queue offsets differ between replicas", len(r.Diverged))
	add(r.Info.Writer == "", "no final scan of the writer")
	if p := r.Pop; p != nil {
		add(r.Info.Durable && !r.LossAllowed && !r.Info.PopDrained,
			"the pop consumer did not get every acknowledged message, and every message it held back, within %v", popDrainWait)
		add(len(p.Missing) > 0, "%d acknowledged messages the pop consumer never got", len(p.Missing))
		add(r.Info.PopDrained && len(p.NotBack) > 0, "%d messages left unacked did not come back to the pop consumer", len(p.NotBack))
		add(len(p.Phantoms) > 0, "%d messages popped that were never sent", len(p.Phantoms))
	}
	add(r.IDs == 0, "nothing was sent")
	for _, e := range r.Info.Errors {
		out = append(out, "run: "+e)
	}
	return out
}

func (r *Report) mode() string {
	return fmt.Sprintf("%s %s/%s", r.Info.Mode, r.Info.Role, r.Info.Flush)
}

func (r *Report) replicaLost() int {
	n := 0
	for _, ol := range r.ReplicaLost {
		n += len(ol.Missing)
	}
	return n
}

// maxFailover is the longest FirstAck over the kills of the writer, and whether there was one.
func (r *Report) maxFailover() (time.Duration, bool) {
	var d time.Duration
	found := false
	for _, f := range r.Faults {
		if losesWriter(f.Kind) {
			found = true
			if f.FirstAck < 0 {
				return -1, true
			}
			d = max(d, f.FirstAck)
		}
	}
	return d, found
}

// Summary is the report's last line: PASS or FAIL and the counts.
func (r *Report) Summary() string {
	verdict := "PASS"
	if len(r.Failures()) > 0 {
		verdict = "FAIL"
	}
	s := fmt.Sprintf("%s %s faults=%d acked=%d/%d lost=%d replica-lost=%d dup=%d bad-dup=%d order=%d offsets-twice=%d phantom=%d unacked-stored=%d not-consumed=%d diverged=%d",
		verdict, r.mode(), len(r.Faults), r.Acked, r.IDs, len(r.Lost), r.replicaLost(), r.Duplicates, len(r.BadDuplicates),
		len(r.OrderViolations), len(r.OffsetConflicts), len(r.Phantoms), r.UnackedStored, len(r.NotConsumed), len(r.Diverged))
	if r.PowerLosses > 0 {
		s += fmt.Sprintf(" power-losses=%d", r.PowerLosses)
	}
	if r.DiskFaults > 0 {
		s += fmt.Sprintf(" disk-faults=%d", r.DiskFaults)
	}
	if r.LossAllowed {
		s += fmt.Sprintf(" offsets-reused=%d", len(r.OffsetsReused))
	}
	if len(r.TailCut) > 0 {
		s += fmt.Sprintf(" tail-cut=%d", len(r.TailCut))
	}
	if p := r.Pop; p != nil {
		s += fmt.Sprintf(" pop=%d/%d pop-missing=%d pop-not-back=%d pop-redelivered=%d", p.IDs, p.Deliveries, len(p.Missing),
			len(p.NotBack), p.AfterHeld+p.AfterAcked+p.AfterAckError)
	}
	s += " quiet-gap=" + r.QuietMaxGap.Round(time.Millisecond).String()
	if d, ok := r.maxFailover(); ok {
		if d < 0 {
			s += " failover-max=none"
		} else {
			s += " failover-max=" + d.Round(time.Millisecond).String()
		}
	}
	return s
}

// String is the full report, ending with the summary line.
func (r *Report) String() string {
	var b strings.Builder
	i := r.Info
	fmt.Fprintf(&b, "run: %s, writer role %s, flush %s, %d queues, %d producer workers, %d retries, started %s\n",
		i.Mode, i.Role, i.Flush, i.Queues, i.Workers, i.Retries, i.Started.UTC().Format(time.RFC3339))
	switch {
	case i.Durable && i.Mode == ModeRaft:
		b.WriteString("promise: an acknowledged message is on a majority and survives every fault of a minority: loss fails the run\n")
	case i.Durable:
		b.WriteString("promise: an acknowledged message survives every fault (SYNC_MASTER + SYNC_FLUSH): loss fails the run\n")
	default:
		fmt.Fprintf(&b, "promise: %s/%s does not promise that an acknowledged message survives the loss of a machine "+
			"(RocketMQ: no loss needs SYNC_MASTER or SYNC_FLUSH, both for a disk and a master loss); loss is reported, not failed\n", i.Role, i.Flush)
	}
	switch {
	case i.Mode == ModeRaft:
		b.WriteString("the followers are not scanned at a kill of the leader: the new leader's final scan is the check\n")
	case i.Replicated:
		b.WriteString("promise: an acknowledged message is on a follower when acknowledged: a follower lacking one at a kill of the writer fails the run\n")
	default:
		b.WriteString("promise: acknowledgement does not wait for a follower: what the followers lacked at a kill of the writer is reported, not failed\n")
	}
	fmt.Fprintf(&b, "sends: %d ids, %d attempts, %d acknowledged, %d retried; attempts by outcome: %s\n",
		r.IDs, r.Attempts, r.Acked, r.Retried, statusLine(r.Status))
	fmt.Fprintf(&b, "consumers drained: %v\n", i.Drained)
	b.WriteString("faults:\n")
	for _, f := range r.Faults {
		first := "none"
		if f.FirstAck >= 0 {
			first = f.FirstAck.Round(time.Millisecond).String()
		}
		lost := ""
		if dropsUnsynced(f.Kind) {
			lost = fmt.Sprintf(", %d acknowledged lost", f.Lost)
			if f.LostSpan > 0 {
				lost += fmt.Sprintf(" (acknowledged up to %v before it)", f.LostSpan.Round(time.Millisecond))
			}
		}
		fmt.Fprintf(&b, "  %2d %-17s %-22s lasted %-8v first ack after start %-8s longest ack gap %v%s%s\n", f.Index, f.Kind, f.Target,
			(time.Duration(f.Healed-f.Start) * time.Microsecond).Round(time.Millisecond), first,
			f.MaxGap.Round(time.Millisecond), lost, noteOf(f.Note))
	}
	fmt.Fprintf(&b, "longest time without an acknowledgement outside the faults: %v\n", r.QuietMaxGap.Round(time.Millisecond))
	for _, ol := range r.ReplicaLost {
		lostBefore := ""
		if ol.LostBefore > 0 {
			lostBefore = fmt.Sprintf(" (and %d lost before, to a power loss)", ol.LostBefore)
		}
		fmt.Fprintf(&b, "kill of the writer, fault %d: %d acknowledged before it, %d missing on the followers%s%s\n",
			ol.Fault, ol.Before, len(ol.Missing), lostBefore, sample(ol.Missing))
	}
	if r.LossAllowed {
		fmt.Fprintf(&b, "power losses: %d, disk faults: %d; %s keeps an acknowledged message in memory only (a Raft majority's, or one broker's "+
			"page cache): loss after a power loss or a failed disk is reported, not failed, and so are the queue offsets of lost messages "+
			"that later messages took: %d%s\n", r.PowerLosses, r.DiskFaults, i.Flush, len(r.OffsetsReused), sample(r.OffsetsReused))
	} else if r.PowerLosses > 0 || r.DiskFaults > 0 {
		fmt.Fprintf(&b, "power losses: %d, disk faults: %d; %s syncs every acknowledged message: loss after them fails the run like any other\n",
			r.PowerLosses, r.DiskFaults, i.Flush)
	}
	if len(r.TailCut) > 0 {
		fmt.Fprintf(&b, "offsets a slave held with a message never acknowledged that its master lost unsynced, "+
			"given to another message after the slave was cut back (reported, not failed): %d%s\n", len(r.TailCut), sample(r.TailCut))
	}
	fmt.Fprintf(&b, "lost (acknowledged, not stored at the end): %d%s\n", len(r.Lost), sample(r.Lost))
	fmt.Fprintf(&b, "duplicates of retried sends (allowed): %d\n", r.Duplicates)
	fmt.Fprintf(&b, "duplicates of sends made once: %d%s\n", len(r.BadDuplicates), sample(r.BadDuplicates))
	fmt.Fprintf(&b, "per-queue order violations: %d%s\n", len(r.OrderViolations), sample(r.OrderViolations))
	fmt.Fprintf(&b, "queue offsets used twice: %d%s\n", len(r.OffsetConflicts), sample(r.OffsetConflicts))
	fmt.Fprintf(&b, "read but never sent: %d%s\n", len(r.Phantoms), sample(r.Phantoms))
	fmt.Fprintf(&b, "never acknowledged, stored anyway (fine): %d\n", r.UnackedStored)
	fmt.Fprintf(&b, "acknowledged, never consumed: %d%s\n", len(r.NotConsumed), sample(r.NotConsumed))
	fmt.Fprintf(&b, "replicas differ: %d%s\n", len(r.Diverged), sample(r.Diverged))
	if p := r.Pop; p != nil {
		fmt.Fprintf(&b, "pop consumer (%s, one BATCH_ACK_MESSAGE a pop; 1 in %d ids left unacked on attempt 1 until acked once): drained %v, %d ids in %d deliveries, "+
			"%d held, %d acks failed; deliveries again after a held one (expected) %d, after an acked one (the ack lost to a fault or "+
			"in a broker's memory: at least once) %d, after a failed ack %d\n", popGroup, popHeldEvery, i.PopDrained, p.IDs,
			p.Deliveries, p.Held, p.AckErrors, p.AfterHeld, p.AfterAcked, p.AfterAckError)
		fmt.Fprintf(&b, "acknowledged and stored, never popped: %d%s\n", len(p.Missing), sample(p.Missing))
		fmt.Fprintf(&b, "held unacked, never popped again: %d%s\n", len(p.NotBack), sample(p.NotBack))
		fmt.Fprintf(&b, "popped but never sent: %d%s\n", len(p.Phantoms), sample(p.Phantoms))
	}
	for _, f := range r.Failures() {
		fmt.Fprintf(&b, "FAIL: %s\n", f)
	}
	b.WriteString(r.Summary())
	b.WriteString("\n")
	return b.String()
}

func statusLine(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func noteOf(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

func sample(l []string) string {
	if len(l) == 0 {
		return ""
	}
	if len(l) > listCap {
		return fmt.Sprintf(": %s, ... (%d more)", strings.Join(l[:listCap], ", "), len(l)-listCap)
	}
	return ": " + strings.Join(l, ", ")
}
