package namesrv

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/internal/peertls"
	"github.com/rocketraft/rocketraft/remoting"
)

// ACLConfig are the name server's access-control keys. RocketMQ 4.x's name server has none: anyone who
// reaches it can register a broker (and so put a topic's route on an address of their choosing), drop a
// broker, delete a topic's route or wipe a broker's write permission. With aclEnable those writes need a
// signed request (RocketMQ's HMAC signature, remoting/acl_sign.go) from an account of aclFile (the broker's
// plain_acl.yml format, package acl) that may make them; reads stay open, as clients of every kind read
// routes without credentials.
//
// Who may write:
//
//	REGISTER_BROKER, UNREGISTER_BROKER          an admin account, or one of aclBrokerAccessKeys
//	DELETE_TOPIC_IN_NAMESRV, PUT_KV_CONFIG,
//	DELETE_KV_CONFIG, WIPE_WRITE_PERM_OF_BROKER,
//	ADD_WRITE_PERM_OF_BROKER,
//	UPDATE_NAMESRV_CONFIG                       an admin account
//
// A global white address, or an account's whiteRemoteAddress, passes as on the broker (a trusted network;
// the signature is not checked for it), but the account (when there is one) must still be allowed. The
// brokers sign with their own accessKey/secretKey (broker keys of the same names). A refusal is answered
// NO_PERMISSION with the reason, nothing changes, and it is logged with the remote address and account.
//
// The other way to write is a client certificate of the cluster's CA (peerTlsTrustCertPath, the file the
// brokers' peer TLS trusts) under the port's TLS: a request on a TLS connection whose client presented a
// certificate that chains to that CA and names a node (URI rocketraft://<group>/<id>, internal/peertls) may
// make every write above, signed or not; the certificate is checked first, and a request it does not
// authorise still passes with a signature as above. The port must ask for client certificates:
// tlsServerMode permissive or enforcing, tlsServerNeedClientAuth optional or require (with
// tlsServerAuthClient the handshake already refuses a certificate tlsServerTrustCertPath does not trust).
// A broker presents its certificate with tlsEnable, tlsClientCertPath and tlsClientKeyPath (its peerTls
// certificate and key serve).
type ACLConfig struct {
	AclEnable bool   `mapstructure:"aclEnable"` // authenticate the write requests against aclFile
	AclFile   string `mapstructure:"aclFile"`   // the plain_acl.yml, absolute or under rocketmqHome (conf/plain_acl.yml)
	// AclBrokerAccessKeys are the accounts, besides admin ones, that may register and unregister brokers
	// (the brokers' accessKey), comma-separated.
	AclBrokerAccessKeys string `mapstructure:"aclBrokerAccessKeys"`
	// PeerTlsTrustCertPath is the cluster CA: with aclEnable, a client certificate that chains to it and
	// names a node authorises every write (see above). Empty: only signed requests write. Re-read when the
	// file changes.
	PeerTlsTrustCertPath string `mapstructure:"peerTlsTrustCertPath"`
}

// defaultAclFile is aclFile's default, under rocketmqHome (the broker's too).
const defaultAclFile = "conf/plain_acl.yml"

func (c Config) aclPath() string {
	if filepath.IsAbs(c.ACL.AclFile) {
		return c.ACL.AclFile
	}
	return filepath.Join(c.RocketmqHome, c.ACL.AclFile)
}

func (c ACLConfig) brokerAccounts() []string {
	var out []string
	for _, k := range strings.Split(c.AclBrokerAccessKeys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func (c ACLConfig) validate(tc remoting.TLSConfig) error {
	if c.AclEnable && strings.TrimSpace(c.AclFile) == "" {
		return errors.New("config key aclFile: is empty while aclEnable is true")
	}
	if strings.TrimSpace(c.PeerTlsTrustCertPath) == "" {
		return nil
	}
	const key = "config key peerTlsTrustCertPath"
	if !c.AclEnable {
		return fmt.Errorf("%s: a client certificate authorises writes only under aclEnable=true; without it every write is open", key)
	}
	if mode, err := remoting.ParseTLSMode(tc.ServerMode); err == nil && mode == remoting.TLSDisabled {
		return fmt.Errorf("%s: needs TLS on the port (tlsServerMode permissive or enforcing) to see client certificates", key)
	}
	switch strings.ToLower(strings.TrimSpace(tc.ServerNeedClientAuth)) {
	case "optional", "require":
	default:
		return fmt.Errorf("%s: needs tlsServerNeedClientAuth optional or require (it is %q): the port does not ask for client certificates",
			key, tc.ServerNeedClientAuth)
	}
	return nil
}

// writeCodes are the requests that change the name server's state, and whether a broker account (not
// only an admin one) may send them. QUERY_DATA_VERSION is one: when the version matches it refreshes the
// broker's liveness, and the version is readable by anyone, so unguarded it would keep a dead broker routed.
var writeCodes = map[remoting.RequestCode]bool{
	remoting.RegisterBroker:        true,
	remoting.QueryDataVersion:      true,
	remoting.BrokerHeartbeat:       true, // refreshes liveness as QUERY_DATA_VERSION does
	remoting.UnregisterBroker:      true,
	remoting.DeleteTopicInNamesrv:  false,
	remoting.PutKVConfig:           false,
	remoting.DeleteKVConfig:        false,
	remoting.WipeWritePermOfBroker: false,
	remoting.AddWritePermOfBroker:  false,
	remoting.UpdateNamesrvConfig:   false,
}

// writeGuard checks the write requests against the ACL file (a remoting.Interceptor).
type writeGuard struct {
	s       *Server
	v       *acl.Validator
	brokers []string
	trust   *peertls.Trust // peerTlsTrustCertPath; nil: certificates authorise nothing
}

// certAuthorised is the connection value that marks a connection whose certificate authorised a write
// (logged once per connection).
const certAuthorised = "namesrv.certAuthorised"

// newWriteGuard loads aclFile when aclEnable is on (nil otherwise); the error names the key.
func newWriteGuard(s *Server) (*writeGuard, error) {
	if !s.cfg.ACL.AclEnable {
		return nil, nil
	}
	v, err := acl.New(s.cfg.aclPath(), s.logger.With("component", "acl"))
	if err != nil {
		return nil, fmt.Errorf("namesrv: config key aclFile: %w", err)
	}
	g := &writeGuard{s: s, v: v, brokers: s.cfg.ACL.brokerAccounts()}
	if path := strings.TrimSpace(s.cfg.ACL.PeerTlsTrustCertPath); path != "" {
		if g.trust, err = peertls.LoadTrust("peerTlsTrustCertPath", path, s.logger.With("component", "acl")); err != nil {
			return nil, fmt.Errorf("namesrv: %w", err)
		}
	}
	return g, nil
}

// byCertificate reports whether conn's client certificate authorises writes; when it does not although the
// client presented one, why not (for the refusal, should the signature fail too).
func (g *writeGuard) byCertificate(conn *remoting.Conn) (bool, error) {
	if g.trust == nil {
		return false, nil
	}
	cs, ok := conn.TLSState()
	if !ok || len(cs.PeerCertificates) == 0 {
		return false, nil
	}
	names, err := g.trust.VerifyNode(cs.PeerCertificates)
	if err != nil {
		return false, err
	}
	if conn.Value(certAuthorised) == nil {
		conn.SetValue(certAuthorised, true)
		g.s.logger.Info("namesrv: writes authorised by a client certificate of the cluster CA", "remote", conn.RemoteAddr(),
			"node", strings.Join(names, ","))
	}
	return true, nil
}

// name is the guard's name on the remoting server (its start-up line): "acl", or "acl+certWrites" when a
// client certificate of peerTlsTrustCertPath may write too.
func (g *writeGuard) name() string {
	if g.trust != nil {
		return "acl+certWrites"
	}
	return "acl"
}

func (g *writeGuard) intercept(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	code := remoting.RequestCode(req.Code)
	brokerMay, write := writeCodes[code]
	if !write {
		return nil
	}
	byCert, certErr := g.byCertificate(conn)
	if byCert {
		return nil
	}
	p, err := g.v.Authenticate(conn.RemoteAddr(), req)
	if err == nil {
		switch {
		case p.Admin:
		case p.AccessKey == "" && p.White: // a global white address
		case brokerMay && slices.Contains(g.brokers, p.AccessKey):
		case brokerMay:
			err = &acl.DeniedError{Account: p.AccessKey, Code: code, Reason: fmt.Sprintf(
				"account [%s] is neither admin nor in aclBrokerAccessKeys; %s needs one of them", p.AccessKey, code)}
		default:
			err = &acl.DeniedError{Account: p.AccessKey, Code: code, Reason: fmt.Sprintf(
				"account [%s] is not admin; %s needs an admin account", p.AccessKey, code)}
		}
	}
	if err == nil {
		return nil
	}
	var d *acl.DeniedError
	if errors.As(err, &d) {
		if certErr != nil {
			d.Reason += "; and the client certificate does not authorise writes: " + certErr.Error()
		}
		g.s.logger.Warn("namesrv: write request refused", "remote", conn.RemoteAddr(), "code", code,
			"account", d.Account, "reason", d.Reason)
	}
	return remoting.NewResponse(remoting.NoPermission, err.Error())
}
