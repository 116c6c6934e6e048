package acl

import (
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/rocketraft/rocketraft/remoting"
)

// Principal is who sent a request, as Authenticate found it.
type Principal struct {
	// AccessKey is the request's account ("" when a global white address passed it without one).
	AccessKey string
	// Admin: the account has admin: true.
	Admin bool
	// White: the remote address matched a global white pattern, or the account's whiteRemoteAddress
	// (the signature was then not checked, as RocketMQ does: a white address is a trusted network).
	White bool
}

// Authenticate checks who sent req, in the first steps of Check's order: a global white address
// passes (White, no account); otherwise the request needs the AccessKey of an account of the file,
// and, unless the remote address matches the account's whiteRemoteAddress, a Signature made with its
// secret. It checks no permission: the caller decides what the principal may do (the name server's
// writes, namesrv/acl.go). It returns a *DeniedError when the sender is not established.
func (v *Validator) Authenticate(remote string, req *remoting.Command) (Principal, error) {
	r := v.rules.Load()
	ip := remoteIP(remote)
	for _, p := range r.globalWhite {
		if p.match(ip) {
			return Principal{White: true}, nil
		}
	}
	code := remoting.RequestCode(req.Code)
	ak := req.ExtFields[remoting.ExtAccessKey]
	deny := func(format string, args ...any) error {
		return &DeniedError{Account: ak, Code: code, Reason: fmt.Sprintf(format, args...)}
	}
	if ak == "" {
		return Principal{}, deny("the request (%s) carries no AccessKey; ACL is enabled (aclEnable=true)", code)
	}
	a := r.accounts[ak]
	if a == nil {
		return Principal{}, deny("account [%s] is not in the ACL file", ak)
	}
	if a.white.match(ip) {
		return Principal{AccessKey: ak, Admin: a.admin, White: true}, nil
	}
	_, err := remoting.VerifySignature(req, func(string) (string, bool) { return a.secretKey, true })
	switch {
	case errors.Is(err, remoting.ErrNoCredentials):
		return Principal{}, deny("the request (%s) of account [%s] carries no Signature", code, ak)
	case err != nil:
		return Principal{}, deny("signature check failed for account [%s]", ak)
	}
	return Principal{AccessKey: ak, Admin: a.admin}, nil
}

// ErrLogin is a refused login: an unknown account or a wrong secret key (the two are not told apart).
var ErrLogin = errors.New("acl: unknown account or wrong secret key")

// Login checks an account's secret key as a person types it (the web console's login): the account must
// be in the file and secretKey its secret, compared in constant time. White addresses play no part: a
// login always needs the secret. It returns the account's Principal or ErrLogin.
func (v *Validator) Login(accessKey, secretKey string) (Principal, error) {
	a := v.rules.Load().accounts[accessKey]
	want := "\x00no account\x00" // compared anyway, so an unknown account costs the same
	if a != nil {
		want = a.secretKey
	}
	ok := subtle.ConstantTimeCompare([]byte(want), []byte(secretKey)) == 1
	if a == nil || !ok {
		return Principal{}, ErrLogin
	}
	return Principal{AccessKey: accessKey, Admin: a.admin}, nil
}
