package ha

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestCheckCodecRoundTrip(t *testing.T) {
	req := CheckRequest{SlaveMaxOffset: 1 << 40, Probes: []Probe{{Offset: 0, Size: 100, CRC: 0xDEADBEEF}, {Offset: 1<<40 - 8, Size: 8, CRC: 1}}}
	got, err := DecodeCheckRequest(req.Encode())
	if err != nil || !reflect.DeepEqual(got, req) {
		t.Fatalf("request round trip: %+v, %v", got, err)
	}
	resp := CheckResponse{MasterMaxOffset: 12345, MasterMinOffset: 1024, Match: []bool{true, false, true}}
	gotResp, err := DecodeCheckResponse(resp.Encode(), 3)
	if err != nil || !reflect.DeepEqual(gotResp, resp) {
		t.Fatalf("response round trip: %+v, %v", gotResp, err)
	}
}

func TestCheckCodecRejectsBadBodies(t *testing.T) {
	good := CheckRequest{Probes: []Probe{{Offset: 1, Size: 2, CRC: 3}}}.Encode()
	for name, b := range map[string][]byte{
		"empty":         nil,
		"short head":    good[:8],
		"torn probe":    good[:len(good)-1],
		"trailing byte": append(append([]byte(nil), good...), 0),
		"negative n":    {0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF},
		"too many":      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0},
	} {
		if _, err := DecodeCheckRequest(b); !errors.Is(err, errBadFrame) {
			t.Errorf("%s: err %v, want errBadFrame", name, err)
		}
	}
	resp := CheckResponse{Match: []bool{true}}.Encode()
	if _, err := DecodeCheckResponse(resp, 2); !errors.Is(err, errBadFrame) {
		t.Errorf("answer count mismatch: %v", err)
	}
	if _, err := DecodeCheckResponse(resp[:10], 1); !errors.Is(err, errBadFrame) {
		t.Errorf("short response: %v", err)
	}
}

func TestParseHeaderRejectsBadFrames(t *testing.T) {
	var b [HeaderSize]byte
	for name, set := range map[string]func(){
		"negative offset": func() { putHeader(b[:], -1, 0) },
		"negative size":   func() { putHeader(b[:], 0, -5) },
		"huge size":       func() { putHeader(b[:], 0, maxBodySize+1) },
	} {
		set()
		if _, _, err := parseHeader(b[:]); !errors.Is(err, errBadFrame) {
			t.Errorf("%s: err %v, want errBadFrame", name, err)
		}
	}
	putHeader(b[:], 1<<33, 32<<10)
	if off, size, err := parseHeader(b[:]); off != 1<<33 || size != 32<<10 || err != nil {
		t.Fatalf("parseHeader = %d, %d, %v", off, size, err)
	}
}

func TestPickProbes(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{0, nil},
		{1, []int{0}},
		{5, []int{0, 1, 2, 3, 4}},
		{20, []int{0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
		{100, []int{0, 35, 67, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99}},
	} {
		got := pickProbes(tc.n)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("pickProbes(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
	if n := len(pickProbes(1 << 24)); n > 64 {
		t.Errorf("%d probes for 16M records", n)
	}
}

func TestAnswerCheck(t *testing.T) {
	l := newMemLog(testFileSize)
	l.putRecords(200, 1) // spans files
	probes, err := walkProbes(l, 0, testFileSize, testFileSize)
	if err != nil {
		t.Fatal(err)
	}
	req := CheckRequest{SlaveMaxOffset: l.MaxPhyOffset()}
	for _, p := range probes {
		req.Probes = append(req.Probes, p.Probe)
	}
	if last := probes[len(probes)-1]; last.keep != testFileSize || last.Size != recordHeader {
		t.Fatalf("last probe of the first file %+v: want its blank record header, keeping the whole file", last)
	}
	req.Probes = append(req.Probes,
		Probe{Offset: l.MaxPhyOffset() - 10, Size: 20},                                // past the end
		Probe{Offset: probes[1].Offset, Size: probes[1].Size, CRC: probes[1].CRC ^ 1}, // wrong bytes
		Probe{Offset: -1, Size: 5})
	resp := AnswerCheck(l, req)
	for i := range probes {
		if !resp.Match[i] {
			t.Errorf("probe %d %+v of the log itself does not match", i, probes[i].Probe)
		}
	}
	for i := len(probes); i < len(req.Probes); i++ {
		if resp.Match[i] {
			t.Errorf("bad probe %+v matched", req.Probes[i])
		}
	}
	if resp.MasterMaxOffset != l.MaxPhyOffset() || resp.MasterMinOffset != 0 {
		t.Fatalf("bounds %d..%d", resp.MasterMinOffset, resp.MasterMaxOffset)
	}
}

func TestConfigValidateNamesTheKey(t *testing.T) {
	for key, set := range map[string]func(*Config){
		"haListenPort":            func(c *Config) { c.HAListenPort = 70000 },
		"haSendHeartbeatInterval": func(c *Config) { c.HASendHeartbeatInterval = 0 },
		"haHousekeepingInterval":  func(c *Config) { c.HAHousekeepingInterval = c.HASendHeartbeatInterval },
		"haTransferBatchSize":     func(c *Config) { c.HATransferBatchSize = MaxTransferBatchSize + 1 },
		"haSlaveFallbehindMax":    func(c *Config) { c.HASlaveFallbehindMax = -1 },
		"haMasterAddress":         func(c *Config) { c.HAMasterAddress = "no-port" },
		"slaveTimeout":            func(c *Config) { c.SlaveTimeout = 0 },
	} {
		c := DefaultConfig()
		set(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "config key "+key+":") {
			t.Errorf("%s: %v", key, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecodeCheckRequest(f *testing.F) {
	f.Add(CheckRequest{SlaveMaxOffset: 7, Probes: []Probe{{1, 2, 3}}}.Encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeCheckRequest(b)
		if err != nil {
			return
		}
		if got, err := DecodeCheckRequest(r.Encode()); err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("re-encode: %+v %v", got, err)
		}
	})
}
