package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
)

// Need is one permission a call of RocketMQ 5's gRPC protocol needs: Perm on the topic Name, or on the
// consumer group Name when Group is set. The gRPC endpoint (package proxy) lists them per call.
type Need struct {
	Name  string
	Group bool
	Perm  Perm
}

// V2Scheme is the signing scheme of the v5 clients' authorization header:
//
//	authorization: MQv2-HMAC-SHA1 Credential=AK, SignedHeaders=x-mq-date-time, Signature=HEX
//
// where HEX is the upper-case hex HMAC-SHA1 of the x-mq-date-time header (yyyyMMdd'T'HHmmss'Z') keyed with
// the account's secret key.
const V2Scheme = "MQv2-HMAC-SHA1"

// ParseV2Authorization splits a v5 authorization header into its access key and signature.
func ParseV2Authorization(h string) (accessKey, signature string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(h), V2Scheme+" ")
	if !ok {
		return "", "", fmt.Errorf("the authorization header is not %s", V2Scheme)
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			accessKey, _, _ = strings.Cut(v, "/") // the Java client may append a scope after a slash
		case "Signature":
			signature = v
		}
	}
	if accessKey == "" || signature == "" {
		return "", "", fmt.Errorf("the authorization header lacks Credential or Signature")
	}
	return accessKey, signature, nil
}

// SignV2 is the signature of dateTime with secretKey, as the v5 clients make it.
func SignV2(secretKey, dateTime string) string {
	m := hmac.New(sha1.New, []byte(secretKey))
	m.Write([]byte(dateTime))
	return strings.ToUpper(hex.EncodeToString(m.Sum(nil)))
}

// CheckV2 checks one gRPC call from remote (ip:port) in Check's order: a global white address passes; then
// the authorization header must name a known account; the account's white address passes the rest; then the
// signature must be SignV2 of the x-mq-date-time header with the account's secret, and each of needs must be
// granted (an admin account without topicPerms and groupPerms has every permission). It returns nil or a
// *DeniedError (Code 0: the call is no remoting request).
func (v *Validator) CheckV2(remote, authorization, dateTime string, needs []Need) error {
	r := v.rules.Load()
	ip := remoteIP(remote)
	for _, p := range r.globalWhite {
		if p.match(ip) {
			return nil
		}
	}
	if authorization == "" {
		return &DeniedError{Reason: "the call carries no authorization header; ACL is enabled (aclEnable=true)"}
	}
	ak, sig, err := ParseV2Authorization(authorization)
	if err != nil {
		return &DeniedError{Reason: err.Error()}
	}
	deny := func(format string, args ...any) error {
		return &DeniedError{Account: ak, Reason: fmt.Sprintf(format, args...)}
	}
	a := r.accounts[ak]
	if a == nil {
		return deny("account [%s] is not in the ACL file", ak)
	}
	if a.white.match(ip) {
		return nil
	}
	if !hmac.Equal([]byte(SignV2(a.secretKey, dateTime)), []byte(strings.ToUpper(sig))) {
		return deny("signature check failed for account [%s]", ak)
	}
	in := make([]need, len(needs))
	for i, n := range needs {
		in[i] = need{name: n.Name, group: n.Group, perm: n.Perm}
	}
	if onlyTracePub(in) || a.admin && len(a.topics) == 0 && len(a.groups) == 0 {
		return nil
	}
	return a.grants(in, deny)
}
