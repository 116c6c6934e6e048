package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUsageErrors: bad invocations exit 2 with a message naming what is wrong, before anything starts.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: mqchaos run"},
		{[]string{"explode"}, "usage: mqchaos run"},
		{[]string{"check"}, "mqchaos check DIR"},
		{[]string{"run", "-faults", "kill-writer,kill-everything"}, `unknown fault kind "kill-everything"`},
		{[]string{"run", "-role", "SLAVE", "-dir", t.TempDir()}, "brokerRole \"SLAVE\""},
		{[]string{"run", "-min-for", "5s", "-max-for", "1s"}, "fault length"},
		{[]string{"run", "-faults", "disk-slow-follower", "-slow-iops", "0"}, "positive IOPS limit"},
		{[]string{"check", t.TempDir()}, "run.json"},
		{[]string{"soak", "-duration", "3m"}, "shorter than the warm-up"},
		{[]string{"soak", "-faults", "kill-writer,melt-disk"}, `unknown fault kind "melt-disk"`},
		{[]string{"soak", "-last", "0"}, "last 0 must be at least 1"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("mqchaos %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
