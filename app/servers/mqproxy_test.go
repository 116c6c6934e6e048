package servers

import (
	"bytes"
	"strings"
	"testing"
)

// mqproxy needs name servers and a good port, naming the key; -p prints its keys with RocketMQ 5's defaults.
func TestProxyConfig(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "")
	var out, errb bytes.Buffer
	if code := RunProxy(nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "config key namesrvAddr") {
		t.Fatalf("no name server: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := RunProxy([]string{"-n", "127.0.0.1:9876", "--grpcServerPort=70000"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "config key grpcServerPort") {
		t.Fatalf("bad port: exit %d, %q", code, errb.String())
	}
	errb.Reset()
	if code := RunProxy([]string{"-n", "127.0.0.1:9876", "--grpcAdvertiseAddress=nohost"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "config key grpcAdvertiseAddress") {
		t.Fatalf("bad advertise address: exit %d, %q", code, errb.String())
	}
	if code := RunProxy([]string{"-p", "-n", "127.0.0.1:9876"}, &out, &errb); code != 0 {
		t.Fatalf("-p: exit %d, %s", code, errb.String())
	}
	for _, want := range []string{"grpcServerPort=8081\n", "namesrvAddr=127.0.0.1:9876\n", "aclEnable=false\n", "tlsServerMode=disabled\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-p output lacks %q", want)
		}
	}
}

// A broker with enableProxy needs name servers: start-up stops naming the key.
func TestBrokerEnableProxyNeedsNamesrv(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "")
	var out, errb bytes.Buffer
	code := RunBroker([]string{"--enableProxy=true", "--storePathRootDir=" + t.TempDir(), "--logDir=" + t.TempDir()}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "enableProxy") {
		t.Fatalf("exit %d, stderr %q: want 1 naming enableProxy", code, errb.String())
	}
}
