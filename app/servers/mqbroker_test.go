package servers

import (
	"bytes"
	"os"
	"path/filepath"
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

// mqbroker reads NAMESRV_ADDR as RocketMQ's does (-n wins); a config file's unknown key is named as written;
// metrics are off by default with RocketMQ 5's keys, and metricsPort is their synonym.
func TestBrokerEnvironmentAndKeys(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "10.0.0.1:9876")
	var out, errb bytes.Buffer
	if code := RunBroker([]string{"-p"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"namesrvAddr=10.0.0.1:9876\n", "metricsExporterType=DISABLE\n", "metricsPromExporterPort=5557\n",
		"logLevel=INFO\n", "logFileMaxIndex=10\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-p lacks %q", want)
		}
	}
	out.Reset()
	file := filepath.Join(t.TempDir(), "broker.conf")
	if err := os.WriteFile(file, []byte("brokerName=b1\nbrokerIP2=10.0.0.2\nmetricsPort=6001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := RunBroker([]string{"-c", file, "-n", "10.0.0.3:9876", "-p"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "namesrvAddr=10.0.0.3:9876\n") || !strings.Contains(out.String(), "metricsPort=6001\n") {
		t.Errorf("-n or the file did not win over NAMESRV_ADDR:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "key=brokerIP2") {
		t.Errorf("the unknown key is not named as written (brokerIP2): %q", errb.String())
	}
	errb.Reset()
	if code := RunBroker([]string{"--metricsExporterType=OTLP_GRPC", "--logDir=" + t.TempDir(), "--storePathRootDir=" + t.TempDir()}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "config key metricsExporterType") {
		t.Errorf("metricsExporterType=OTLP_GRPC: exit %d, %q", code, errb.String())
	}
}
