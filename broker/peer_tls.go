package broker

import (
	"fmt"
	"log/slog"

	"github.com/rocketraft/rocketraft/internal/peertls"
)

// peerTLSMaterial loads the peerTls* files for the links of group (the Raft group in the Raft mode,
// the brokerName for the classic HA link): nil when peerTlsMode is disabled. The error names the key
// of a file that is missing or does not match. internal/peertls/doc.go has the trust model.
func (c Config) peerTLSMaterial(group string, lg *slog.Logger) (*peertls.Material, error) {
	m, err := peertls.Load(c.PeerTLS, group, lg)
	if err != nil {
		return nil, fmt.Errorf("broker: peer TLS: %w", err)
	}
	if m != nil {
		lg.Info("peer TLS enforcing on the replication links", "group", group, "cert", c.PeerTLS.CertPath,
			"trust", c.PeerTLS.TrustCertPath)
	}
	return m, nil
}
