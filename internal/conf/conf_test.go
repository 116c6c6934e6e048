package conf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type Inner struct {
	FileSize int64  `mapstructure:"mappedFileSizeCommitLog"`
	Flush    string `mapstructure:"flushDiskType"`
}

type outer struct {
	Inner       `mapstructure:",squash"`
	ListenPort  int           `mapstructure:"listenPort"`
	AutoCreate  bool          `mapstructure:"autoCreateTopicEnable"`
	NamesrvAddr string        `mapstructure:"namesrvAddr"`
	Peers       []string      `mapstructure:"peers"`
	Wait        time.Duration `mapstructure:"wait"`
	Hidden      string        `mapstructure:"-"`
}

func defaults() outer {
	return outer{Inner: Inner{FileSize: 1 << 30, Flush: "ASYNC_FLUSH"}, ListenPort: 10911, AutoCreate: true}
}

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadPropertiesFileAndOverrides(t *testing.T) {
	p := write(t, "broker.properties", "# comment\nlistenPort=30911\nflushDiskType=SYNC_FLUSH\nmappedFileSizeCommitLog=1048576\nbrokerIP2=1.2.3.4\npeers=a:1;b:2\n")
	args, err := ParseArgs([]string{"-c", p, "--autoCreateTopicEnable=false", "--wait", "250ms", "-n", "127.0.0.1:9876"})
	if err != nil {
		t.Fatal(err)
	}
	c := defaults()
	res, err := Load(args, &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenPort != 30911 || c.Flush != "SYNC_FLUSH" || c.FileSize != 1<<20 || c.AutoCreate || c.Wait != 250*time.Millisecond {
		t.Fatalf("loaded %+v", c)
	}
	if c.NamesrvAddr != "127.0.0.1:9876" {
		t.Fatalf("namesrvAddr = %q", c.NamesrvAddr)
	}
	if len(c.Peers) != 2 || c.Peers[1] != "b:2" {
		t.Fatalf("peers = %v", c.Peers)
	}
	if len(res.UnknownKeys) != 1 || res.UnknownKeys[0] != "brokerIP2" { // as written, not lower-cased by viper
		t.Fatalf("unknown keys = %v", res.UnknownKeys)
	}
}

func TestLoadYAML(t *testing.T) {
	p := write(t, "broker.yaml", "listenPort: 20911\nautoCreateTopicEnable: false\nbrokerIP2: 1.2.3.4\n")
	c := defaults()
	res, err := Load(Args{ConfigFile: p}, &c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.UnknownKeys) != 1 || res.UnknownKeys[0] != "brokerIP2" {
		t.Fatalf("unknown keys = %v, want [brokerIP2] as written", res.UnknownKeys)
	}
	if c.ListenPort != 20911 || c.AutoCreate {
		t.Fatalf("loaded %+v", c)
	}
	if c.Flush != "ASYNC_FLUSH" {
		t.Fatalf("a key absent from the file changed: %+v", c)
	}
}

func TestBadValueNamesTheKey(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"--listenPort=ten", "config key listenPort"},
		{"--autoCreateTopicEnable=maybe", "config key autoCreateTopicEnable"},
		{"--mappedFileSizeCommitLog=1G", "config key mappedFileSizeCommitLog"},
		{"--wait=soon", "config key wait"},
	} {
		args, err := ParseArgs([]string{tc.arg})
		if err != nil {
			t.Fatal(err)
		}
		c := defaults()
		_, err = Load(args, &c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to name %q", tc.arg, err, tc.want)
		}
	}
}

func TestMissingFileAndBadArgs(t *testing.T) {
	c := defaults()
	if _, err := Load(Args{ConfigFile: filepath.Join(t.TempDir(), "nope.properties")}, &c); err == nil {
		t.Fatal("missing config file accepted")
	}
	for _, argv := range [][]string{{"-c"}, {"stray"}, {"--=x"}, {"--key"}} {
		if _, err := ParseArgs(argv); err == nil {
			t.Errorf("ParseArgs(%q) accepted", argv)
		}
	}
}

func TestPrint(t *testing.T) {
	c := defaults()
	var buf bytes.Buffer
	if err := Print(&buf, &c); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"listenPort=10911\n", "flushDiskType=ASYNC_FLUSH\n", "mappedFileSizeCommitLog=1073741824\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("print lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Hidden") {
		t.Error("a field tagged - was printed")
	}
}
