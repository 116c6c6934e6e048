package protocol

import (
	"strings"
	"testing"
)

func TestValidateTopicName(t *testing.T) {
	for _, ok := range []string{"T", "Topic_1", "%RETRY%group-a", "a|b", strings.Repeat("x", 127)} {
		if err := ValidateTopicName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "topic!", "tópico", "a/b", strings.Repeat("x", 128), "a\x00"} {
		if err := ValidateTopicName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
