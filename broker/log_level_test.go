package broker_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketraft/rocketraft/app/cluster"
	"github.com/rocketraft/rocketraft/broker"
	"github.com/rocketraft/rocketraft/remoting"
)

// UPDATE_BROKER_CONFIG (mqadmin updateBrokerConfig -k logLevel -v DEBUG) changes the level of stderr and the
// log files at once; a bad level is refused naming the key and changes nothing.
func TestUpdateBrokerConfigLogLevel(t *testing.T) {
	logs, dir := openTestLogs(t)
	b := startBrokerWith(t, cluster.TestBrokerConfig(t, "", "loglevel"), broker.Options{Logger: logs.Logger, SetLogLevel: logs.SetLevel})
	w := newWire(t, b.Addr())
	probe := logs.Logger.With("component", "store") // a logger made before the change
	probe.Debug("debug before")

	expectCode(t, "logLevel=DEBUG", w.call(remoting.UpdateBrokerConfig, nil, []byte("logLevel=DEBUG\n")), remoting.Success)
	if logs.Level() != slog.LevelDebug {
		t.Fatalf("level %s after logLevel=DEBUG", logs.Level())
	}
	probe.Debug("debug after")
	text, _ := os.ReadFile(filepath.Join(dir, "store.log"))
	if strings.Contains(string(text), "debug before") || !strings.Contains(string(text), "debug after") {
		t.Fatalf("store.log after the change:\n%s", text)
	}
	resp := w.call(remoting.GetBrokerConfig, nil, nil)
	if !strings.Contains(string(resp.Body), "logLevel=DEBUG") {
		t.Errorf("GET_BROKER_CONFIG does not show logLevel=DEBUG")
	}
	expectCode(t, "logLevel=LOUD", w.call(remoting.UpdateBrokerConfig, nil, []byte("logLevel=LOUD\n")), remoting.InvalidParameter, "logLevel")
	if logs.Level() != slog.LevelDebug {
		t.Fatalf("a refused logLevel changed the level to %s", logs.Level())
	}
	expectCode(t, "logLevel=warn", w.call(remoting.UpdateBrokerConfig, nil, []byte("logLevel=warn\n")), remoting.Success)
	if logs.Level() != slog.LevelWarn {
		t.Fatalf("level %s after logLevel=warn", logs.Level())
	}
}
