package remoting

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
)

// ACL request signing (RocketMQ 4.x plain ACL, as its AclClientRPCHook signs). A signed request carries two more
// header fields: AccessKey, the account, and Signature, computed as
//
//	content   = the values of the header fields (AccessKey included, Signature excluded), ordered by key
//	            byte-wise ascending, concatenated without separators
//	data      = content as UTF-8, followed by the body bytes
//	Signature = Base64 (standard, padded) of HMAC-SHA1(key = secret key, data)
//
// which is what the official Go client's ACLInterceptor and the Java AclClientRPCHook both send. The header
// names are wire format: never change them.
const (
	ExtAccessKey     = "AccessKey"
	ExtSignature     = "Signature"
	ExtSecurityToken = "SecurityToken"
	// extUniqueKeyQuery is left out of the signed content for requests of version V4_9_3 (399) and older:
	// old Java clients add it after signing, so the Java verifier skips it, and a signer must too.
	extUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
	versionV4_9_3     = 399
)

// Sentinels matched (errors.Is) by VerifySignature's errors. None of the error texts carries a secret.
var (
	ErrNoCredentials    = errors.New("remoting: request has no AccessKey or no Signature")
	ErrUnknownAccessKey = errors.New("remoting: unknown access key")
	ErrBadSignature     = errors.New("remoting: signature does not match")
)

// SignRequest adds AccessKey and Signature to cmd's header fields, signing the other header fields and the
// body with secretKey exactly as the official Go client does. Call it after the last change to the header or
// the body; a Signature already present is replaced.
func SignRequest(cmd *Command, accessKey, secretKey string) {
	cmd.SetExt(ExtAccessKey, accessKey)
	delete(cmd.ExtFields, ExtSignature)
	cmd.ExtFields[ExtSignature] = Signature(secretKey, signedContent(cmd, ""), cmd.Body, cmd.BodyParts...)
}

// Signature is Base64(HMAC-SHA1(secretKey, content + body + parts)): the signature of a request whose
// header content (see the package notes above SignRequest) is content.
func Signature(secretKey, content string, body []byte, parts ...[]byte) string {
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write([]byte(content))
	mac.Write(body)
	for _, p := range parts {
		mac.Write(p)
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifySignature checks a signed request: it finds the secret of the request's AccessKey with secretLookup
// (ok false: no such account) and compares the Signature in constant time. It returns the access key, so the
// caller can go on to check the account's permissions.
//
// A request carrying a SecurityToken is accepted signed either with the token's value in the content (the Java
// client) or without it (the official Go client adds the field but does not sign it).
//
// secretLookup may be called concurrently from many connections; it must not block on the network.
func VerifySignature(cmd *Command, secretLookup func(accessKey string) (secretKey string, ok bool)) (string, error) {
	ak, sig := cmd.ExtFields[ExtAccessKey], cmd.ExtFields[ExtSignature]
	if ak == "" || sig == "" {
		return ak, ErrNoCredentials
	}
	sk, ok := secretLookup(ak)
	if !ok {
		return ak, fmt.Errorf("%w %q", ErrUnknownAccessKey, ak)
	}
	if signatureEqual(sig, Signature(sk, signedContent(cmd, ""), cmd.Body, cmd.BodyParts...)) {
		return ak, nil
	}
	if _, hasToken := cmd.ExtFields[ExtSecurityToken]; hasToken &&
		signatureEqual(sig, Signature(sk, signedContent(cmd, ExtSecurityToken), cmd.Body, cmd.BodyParts...)) {
		return ak, nil
	}
	return ak, fmt.Errorf("%w for access key %q (%s)", ErrBadSignature, ak, RequestCode(cmd.Code))
}

// signedContent concatenates the values of cmd's header fields in key order, leaving out Signature, skip
// (when not ""), and _UNIQUE_KEY_QUERY for requests of version V4_9_3 and older.
func signedContent(cmd *Command, skip string) string {
	keys := make([]string, 0, len(cmd.ExtFields))
	n := 0
	for k, v := range cmd.ExtFields {
		if k == ExtSignature || k == skip || (k == extUniqueKeyQuery && cmd.Version <= versionV4_9_3) {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	sort.Strings(keys)
	buf := make([]byte, 0, n)
	for _, k := range keys {
		buf = append(buf, cmd.ExtFields[k]...)
	}
	return string(buf)
}

func signatureEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
