package remoting

import "log/slog"

// Secret is a secret key in a config struct or a Credentials. It prints as "******" (fmt, slog, and the
// config printer, which formats with fmt), so a config dump or a log line never shows it; convert it with
// string(s) where the value itself is needed. An empty Secret prints as "".
type Secret string

const secretMask = "******"

// String masks the secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return secretMask
}

// GoString masks the secret in %#v too.
func (s Secret) GoString() string { return `remoting.Secret("` + s.String() + `")` }

// LogValue masks the secret in slog records.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Credentials are an ACL account: the access key names it, the secret key signs requests (SignRequest). The
// zero value means no credentials.
type Credentials struct {
	AccessKey string
	SecretKey Secret
}
