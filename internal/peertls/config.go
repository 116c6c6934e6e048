package peertls

import (
	"errors"
	"fmt"
	"strings"
)

// Modes of peerTlsMode.
const (
	// ModeDisabled: the links are plain TCP (the default).
	ModeDisabled = "disabled"
	// ModeEnforcing: every link is mutual TLS; a peer without a valid certificate is refused.
	ModeEnforcing = "enforcing"
)

// Config are the peerTls* keys of a broker. Squash it into the component's config.
type Config struct {
	Mode          string `mapstructure:"peerTlsMode"`          // disabled (default) or enforcing
	CertPath      string `mapstructure:"peerTlsCertPath"`      // PEM certificate (chain) of this node, naming rocketraft://<group>/<id>
	KeyPath       string `mapstructure:"peerTlsKeyPath"`       // its PEM private key, unencrypted (PKCS#1, PKCS#8 or EC)
	TrustCertPath string `mapstructure:"peerTlsTrustCertPath"` // PEM certificate(s) of the cluster CA peers' certificates must chain to
}

// DefaultConfig is peer TLS off.
func DefaultConfig() Config { return Config{Mode: ModeDisabled} }

// Enforcing reports whether peer TLS is on.
func (c Config) Enforcing() bool { return strings.EqualFold(strings.TrimSpace(c.Mode), ModeEnforcing) }

// Validate checks the keys' values, naming each bad key; the files are read by Load.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config key %s: %s", key, fmt.Sprintf(format, args...)))
	}
	switch strings.ToLower(strings.TrimSpace(c.Mode)) {
	case "", ModeDisabled:
		return nil
	case ModeEnforcing:
	default:
		bad("peerTlsMode", "%q is not disabled or enforcing", c.Mode)
		return errors.Join(errs...)
	}
	for _, k := range []struct{ key, v string }{
		{"peerTlsCertPath", c.CertPath}, {"peerTlsKeyPath", c.KeyPath}, {"peerTlsTrustCertPath", c.TrustCertPath},
	} {
		if strings.TrimSpace(k.v) == "" {
			bad(k.key, "is needed when peerTlsMode is enforcing")
		}
	}
	return errors.Join(errs...)
}
