package namesrv

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rocketraft/rocketraft/acl"
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
//	ADD_WRITE_PERM_OF_BROKER                    an admin account
//
// A global white address, or an account's whiteRemoteAddress, passes as on the broker (a trusted network;
// the signature is not checked for it), but the account (when there is one) must still be allowed. The
// brokers sign with their own accessKey/secretKey (broker keys of the same names). A refusal is answered
// NO_PERMISSION with the reason, nothing changes, and it is logged with the remote address and account.
type ACLConfig struct {
	AclEnable bool   `mapstructure:"aclEnable"` // authenticate the write requests against aclFile
	AclFile   string `mapstructure:"aclFile"`   // the plain_acl.yml, absolute or under rocketmqHome (conf/plain_acl.yml)
	// AclBrokerAccessKeys are the accounts, besides admin ones, that may register and unregister brokers
	// (the brokers' accessKey), comma-separated.
	AclBrokerAccessKeys string `mapstructure:"aclBrokerAccessKeys"`
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

func (c ACLConfig) validate() error {
	if c.AclEnable && strings.TrimSpace(c.AclFile) == "" {
		return errors.New("config key aclFile: is empty while aclEnable is true")
	}
	return nil
}

// writeCodes are the requests that change the name server's state, and whether a broker account (not
// only an admin one) may send them.
var writeCodes = map[remoting.RequestCode]bool{
	remoting.RegisterBroker:        true,
	remoting.UnregisterBroker:      true,
	remoting.DeleteTopicInNamesrv:  false,
	remoting.PutKVConfig:           false,
	remoting.DeleteKVConfig:        false,
	remoting.WipeWritePermOfBroker: false,
	remoting.AddWritePermOfBroker:  false,
}

// writeGuard checks the write requests against the ACL file (a remoting.Interceptor).
type writeGuard struct {
	s       *Server
	v       *acl.Validator
	brokers []string
}

// newWriteGuard loads aclFile when aclEnable is on (nil otherwise); the error names the key.
func newWriteGuard(s *Server) (*writeGuard, error) {
	if !s.cfg.ACL.AclEnable {
		return nil, nil
	}
	v, err := acl.New(s.cfg.aclPath(), s.logger.With("component", "acl"))
	if err != nil {
		return nil, fmt.Errorf("namesrv: config key aclFile: %w", err)
	}
	return &writeGuard{s: s, v: v, brokers: s.cfg.ACL.brokerAccounts()}, nil
}

func (g *writeGuard) intercept(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	code := remoting.RequestCode(req.Code)
	brokerMay, write := writeCodes[code]
	if !write {
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
		g.s.logger.Warn("namesrv: write request refused", "remote", conn.RemoteAddr(), "code", code,
			"account", d.Account, "reason", d.Reason)
	}
	return remoting.NewResponse(remoting.NoPermission, err.Error())
}
