package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileAtomicKeepsBackup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "topics.json")
	if _, err := ReadConfigFile(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := WriteFileAtomic(path, []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte(`{"v":2}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadConfigFile(path); err != nil || string(b) != `{"v":2}` {
		t.Fatalf("read = %q, %v", b, err)
	}
	if b, err := os.ReadFile(path + ".bak"); err != nil || string(b) != `{"v":1}` {
		t.Fatalf("backup = %q, %v", b, err)
	}
	// A crash between writing and renaming leaves an empty or missing main file: the backup
	// is read instead.
	for _, damage := range []func() error{
		func() error { return os.WriteFile(path, nil, 0o644) },
		func() error { return os.Remove(path) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		if b, err := ReadConfigFile(path); err != nil || string(b) != `{"v":1}` {
			t.Fatalf("fallback read = %q, %v", b, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		if e.Name() != "topics.json.bak" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

func TestConfigValidateNamesKey(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, tc := range []struct {
		key    string
		change func(*Config)
	}{
		{"flushDiskType", func(c *Config) { c.FlushDiskType = "SOMETIMES" }},
		{"brokerRole", func(c *Config) { c.BrokerRole = "BOSS" }},
		{"mappedFileSizeCommitLog", func(c *Config) { c.MappedFileSizeCommitLog = 100 }},
		{"mappedFileSizeConsumeQueue", func(c *Config) { c.MappedFileSizeConsumeQueue = 30 }},
		{"maxMessageSize", func(c *Config) { c.MaxMessageSize = 0 }},
		{"maxMessageSize", func(c *Config) { c.MappedFileSizeCommitLog = 1 << 20; c.MaxMessageSize = 1 << 20 }},
		{"deleteWhen", func(c *Config) { c.DeleteWhen = "25" }},
		{"deleteWhen", func(c *Config) { c.DeleteWhen = "04;x" }},
		{"diskMaxUsedSpaceRatio", func(c *Config) { c.DiskMaxUsedSpaceRatio = 99 }},
		{"syncFlushTimeout", func(c *Config) { c.SyncFlushTimeout = 0 }},
		{"storePathRootDir", func(c *Config) { c.StorePathRootDir = " " }},
		{"transientStorePoolSize", func(c *Config) { c.TransientStorePoolEnable = true; c.TransientStorePoolSize = 0 }},
		{"maxIndexNum", func(c *Config) { c.MaxIndexNum = 200000000 }},
	} {
		c := DefaultConfig()
		tc.change(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !containsKey(err.Error(), tc.key) {
			t.Errorf("%s: Validate() = %v", tc.key, err)
		}
	}
}

func containsKey(msg, key string) bool { return strings.Contains(msg, key+":") }

func TestDefaultRootIsHomeStore(t *testing.T) {
	t.Setenv("HOME", "/home/someone")
	cfg := DefaultConfig()
	if cfg.StorePathRootDir != "/home/someone/store" || cfg.commitLogDir() != "/home/someone/store/commitlog" {
		t.Fatalf("root %q, commitlog %q", cfg.StorePathRootDir, cfg.commitLogDir())
	}
	t.Setenv("HOME", "")
	if cfg := DefaultConfig(); cfg.StorePathRootDir != "store" {
		t.Fatalf("root without a home %q", cfg.StorePathRootDir)
	}
}

// ReadConfigJSON: no file is not found and no error; a file is decoded; one that is not JSON is an error
// that names it.
func TestReadConfigJSON(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "delayOffset.json")
	var v struct{ N int }
	if found, err := ReadConfigJSON(path, &v); found || err != nil {
		t.Fatalf("missing file: found %v, %v", found, err)
	}
	if err := WriteFileAtomic(path, []byte(`{"N":3}`)); err != nil {
		t.Fatal(err)
	}
	if found, err := ReadConfigJSON(path, &v); !found || err != nil || v.N != 3 {
		t.Fatalf("found %v, %v, value %+v", found, err, v)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadConfigJSON(path, &v); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("not JSON: %v, want an error naming %s", err, path)
	}
}
