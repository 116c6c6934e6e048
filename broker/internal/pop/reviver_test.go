package pop

import (
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/testutil"
)

// TestRedeliveryWaitsForRecordNotVisibleYet: a message whose invisible time passed while its record is not
// readable yet (Raft mode: the unit dispatched before the state machine raised the read limit) is
// redelivered once it is, never skipped as gone. Before, the revive service took the read's
// store.ErrNotFound for an expired file, acked the message in its check point and lost it.
func TestRedeliveryWaitsForRecordNotVisibleYet(t *testing.T) {
	h := newHarness(t, testConfig())
	h.send(testTopic, 0, 1)
	h.hidden.Store(true)
	retry := h.e.RetryTopic(testTopic, testGroup)
	got := h.pop(0, 32, 200*time.Millisecond)
	if len(got) != 1 {
		t.Fatalf("popped %d, want 1", len(got))
	}
	testutil.WaitFor(t, 10*time.Second, "the revive service read the record", func() bool { return h.hiddenLooks.Load() > 0 })
	if n := h.st.MaxOffsetInQueue(retry, 0); n != 0 {
		t.Fatalf("%d redelivered while the record was not visible", n)
	}
	h.hidden.Store(false)
	testutil.WaitFor(t, 10*time.Second, "the message redelivered to the retry topic", func() bool { return h.st.MaxOffsetInQueue(retry, 0) == 1 })
}
