package ha

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/rocketraft/rocketraft/internal/peertls"
)

// Peer TLS on the HA link (peerTlsMode=enforcing; internal/peertls/doc.go has the trust model).
//
// With ServiceOptions.PeerTLS the master runs a TLS handshake on every accepted connection before a
// byte of the HA protocol: the slave must present a certificate of the cluster CA naming a node of
// this broker group (rocketraft://<brokerName>/<any id>). A connection that fails gets no CommitLog
// byte and no acknowledgement of it counts; it is logged once with its address. With
// ClientOptions.PeerTLS the slave dials TLS and checks the master's certificate the same way. The
// frames are unchanged inside the TLS stream.

// handshakeTimeout bounds a peer TLS handshake on the HA port.
const handshakeTimeout = 10 * time.Second

// acceptTLS runs the server side of a peer TLS handshake on nc (closing nc when it fails).
func acceptTLS(ctx context.Context, m *peertls.Material, nc net.Conn) (net.Conn, error) {
	tc := tls.Server(nc, m.ServerConfig())
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return tc, nil
}

// dialTLS runs the client side of a peer TLS handshake on nc (closing nc when it fails).
func dialTLS(ctx context.Context, m *peertls.Material, nc net.Conn) (net.Conn, error) {
	tc := tls.Client(nc, m.ClientConfig(""))
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return tc, nil
}
