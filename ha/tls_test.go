package ha

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/internal/peertls/peertlstest"
)

func loadPeerTLS(t *testing.T, c peertls.Config, group string) *peertls.Material {
	t.Helper()
	m, err := peertls.Load(c, group, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func clientCert(t *testing.T, c peertls.Config) []tls.Certificate {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(c.CertPath, c.KeyPath)
	if err != nil {
		t.Fatal(err)
	}
	return []tls.Certificate{cert}
}

// TestPeerTLSSlaveReplicatesAndRoguesGetNothing: under peer TLS a slave with a certificate of the
// cluster CA for the group replicates byte for byte; a connection over plain TCP, over TLS without
// a certificate, with a certificate of another CA or of another group gets zero CommitLog bytes, and
// each is logged once with its address.
func TestPeerTLSSlaveReplicatesAndRoguesGetNothing(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	master, slave := newMemLog(testFileSize), newMemLog(testFileSize)
	master.putRecords(100, 1)
	sink, log := newLogSink(t)
	svc, err := NewService(testConfig(), master, ServiceOptions{Logger: log.With("side", "master"), ListenAddr: "127.0.0.1:0",
		FileSize: testFileSize, PeerTLS: loadPeerTLS(t, ca.Node("broker-a", "0"), "broker-a")})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	addr := svc.Addr().String()

	cases := []struct {
		name string
		cfg  *tls.Config // nil: plain TCP
	}{
		{"plain TCP", nil},
		{"TLS without a certificate", &tls.Config{InsecureSkipVerify: true}},
		{"certificate of another CA", &tls.Config{InsecureSkipVerify: true, Certificates: clientCert(t, peertlstest.NewCA(t, "rogue").Node("broker-a", "1"))}},
		{"certificate of another group", &tls.Config{InsecureSkipVerify: true, Certificates: clientCert(t, ca.Node("broker-b", "1"))}},
	}
	for _, tc := range cases {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		local := raw.LocalAddr().String()
		var conn net.Conn = raw
		if tc.cfg != nil {
			tlsConn := tls.Client(raw, tc.cfg)
			_ = tlsConn.Handshake() // may pass on the client side (TLS 1.3 reports the refusal on the first read)
			conn = tlsConn
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		// The report a slave sends: "I have nothing, stream from the start".
		_, _ = conn.Write(binary.BigEndian.AppendUint64(nil, 0))
		got, _ := io.ReadAll(conn)
		_ = conn.Close()
		if tc.cfg == nil {
			// Plain TCP: what comes back, if anything, is the server's TLS alert, never a frame.
			if len(got) > 0 && got[0] != 0x15 {
				t.Errorf("%s: got %d bytes starting %x", tc.name, len(got), got[:min(len(got), 16)])
			}
		} else if len(got) > 0 {
			t.Errorf("%s: got %d bytes of the HA stream", tc.name, len(got))
		}
		eventually(t, 10*time.Second, func() bool { return sink.Count("refused a peer connection", "remote="+local) >= 1 }, "%s: refusal logged", tc.name)
		if n := sink.Count("refused a peer connection", "remote="+local); n != 1 {
			t.Errorf("%s: refusal of %s logged %d times", tc.name, local, n)
		}
	}
	if svc.AckedOffset() != 0 {
		t.Fatalf("a rogue's report counted: acked %d", svc.AckedOffset())
	}

	// The real slave.
	cfg := testConfig()
	cfg.HAMasterAddress = addr
	client, err := NewClient(cfg, slave, ClientOptions{Logger: log.With("side", "slave"), FileSize: testFileSize,
		Checker: localChecker{master}, PeerTLS: loadPeerTLS(t, ca.Node("broker-a", "1"), "broker-a")})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	master.putRecords(100, 2)
	waitIdentical(t, master, slave)
	eventually(t, 10*time.Second, func() bool { return svc.AckedOffset() == master.MaxPhyOffset() }, "the slave's acknowledgement")
}

// TestPeerTLSSlaveRefusesAMasterOfAnotherCA: a slave does not take a stream from a master whose
// certificate the cluster CA did not sign.
func TestPeerTLSSlaveRefusesAMasterOfAnotherCA(t *testing.T) {
	ca := peertlstest.NewCA(t, "cluster")
	rogueCA := peertlstest.NewCA(t, "rogue")
	master, slave := newMemLog(testFileSize), newMemLog(testFileSize)
	master.putRecords(50, 1)
	sink, log := newLogSink(t)
	rogueMaster := rogueCA.Node("broker-a", "0")
	svc, err := NewService(testConfig(), master, ServiceOptions{Logger: log.With("side", "master"), ListenAddr: "127.0.0.1:0",
		FileSize: testFileSize, PeerTLS: loadPeerTLS(t, rogueMaster, "broker-a")})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close() })
	cfg := testConfig()
	cfg.HAMasterAddress = svc.Addr().String()
	client, err := NewClient(cfg, slave, ClientOptions{Logger: log.With("side", "slave"), FileSize: testFileSize,
		PeerTLS: loadPeerTLS(t, ca.Node("broker-a", "1"), "broker-a")})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	eventually(t, 10*time.Second, func() bool { return sink.Count("side=slave", "not signed by the cluster CA") >= 1 }, "the slave's refusal")
	if slave.MaxPhyOffset() != 0 {
		t.Fatalf("the slave appended %d bytes from a master of another CA", slave.MaxPhyOffset())
	}
}
