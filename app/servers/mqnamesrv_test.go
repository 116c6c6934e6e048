package servers

import (
	"bytes"
	"strings"
	"testing"
)

func TestNamesrvConfig(t *testing.T) {
	var out, errb bytes.Buffer
	if code := RunNamesrv([]string{"-p", "--listenPort=19876"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "listenPort=19876\n") {
		t.Fatalf("-p: exit %d, out %q, err %q", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := RunNamesrv([]string{"--listenPort=x"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "listenPort") {
		t.Fatalf("bad value: exit %d, stderr %q", code, errb.String())
	}
}
