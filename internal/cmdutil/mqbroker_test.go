package cmdutil

import (
	"bytes"
	"strings"
	"testing"
)

func TestBadValueStopsStartupNamingTheKey(t *testing.T) {
	var out, errb bytes.Buffer
	if code := RunBroker([]string{"--listenPort=abc"}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "config key listenPort") {
		t.Fatalf("stderr %q does not name listenPort", errb.String())
	}
	errb.Reset()
	code := RunBroker([]string{"--flushDiskType=SOMETIMES", "--storePathRootDir=" + t.TempDir(), "--logDir=" + t.TempDir()}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "flushDiskType") {
		t.Fatalf("exit %d, stderr %q: want 1 naming flushDiskType", code, errb.String())
	}
}

func TestPrintConfigWarnsUnknownKeys(t *testing.T) {
	var out, errb bytes.Buffer
	if code := RunBroker([]string{"-p", "--brokerName=broker-x", "--noSuchKey=1", "-n", "127.0.0.1:9876"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"brokerName=broker-x\n", "namesrvAddr=127.0.0.1:9876\n", "listenPort=10911\n", "flushDiskType=ASYNC_FLUSH\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-p output lacks %q", want)
		}
	}
	if !strings.Contains(errb.String(), "unknown config key") || !strings.Contains(errb.String(), "noSuchKey") {
		t.Errorf("no warning for the unknown key: %q", errb.String())
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := RunBroker([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: mqbroker") {
		t.Fatalf("-h: exit %d, %q", code, out.String())
	}
	if code := RunBroker([]string{"stray"}, &out, &errb); code != 2 {
		t.Fatalf("stray argument: exit %d", code)
	}
}
