package acl

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/rocketraft/rocketraft/internal/atomicfile"
	"github.com/rocketraft/rocketraft/protocol"
)

// The remote edits of the ACL file (RocketMQ's PlainPermissionManager.updateAccessConfig,
// deleteAccessConfig, updateGlobalWhiteAddrsConfig, getAllAclConfig): each reads the file as it is on disk,
// changes it, checks the result as a load would (ParseRules: a bad account or pattern is refused, naming the
// entry), writes it atomically (a temporary file in the same folder, fsynced, renamed over the file, the
// folder fsynced) and puts the new rules in force before it returns. The file's dataVersion counter goes up
// by one with each edit (Version). Like RocketMQ's, the rewrite keeps the accounts and white addresses but
// not comments, nor keys this version does not know.

// ErrNoAccount is an edit of an account the ACL file does not have.
var ErrNoAccount = errors.New("acl: no such account")

// AccountEdit creates or changes one account (UPDATE_AND_CREATE_ACL_CONFIG). A field left at its zero value
// (nil for the pointers and lists) keeps the account's value; a new account needs SecretKey. An empty, non-nil
// TopicPerms or GroupPerms clears the list.
type AccountEdit struct {
	AccessKey          string
	SecretKey          string
	WhiteRemoteAddress *string
	Admin              *bool
	DefaultTopicPerm   string
	DefaultGroupPerm   string
	TopicPerms         []string
	GroupPerms         []string
}

// UpdateAccount creates the account e names, or changes the fields e sets. A result the file format refuses
// (a key of 6 characters or fewer, an unknown permission, a bad address pattern) is an error naming the
// field, and the file stays as it was.
func (v *Validator) UpdateAccount(e AccountEdit) error {
	e.AccessKey = strings.TrimSpace(e.AccessKey)
	if e.AccessKey == "" {
		return errors.New("acl: the account edit has no accessKey")
	}
	return v.edit(func(f *fileSchema) error {
		i := f.account(e.AccessKey)
		if i < 0 {
			if strings.TrimSpace(e.SecretKey) == "" {
				return fmt.Errorf("acl: account [%s] is new and needs a secretKey", e.AccessKey)
			}
			f.Accounts = append(f.Accounts, accountSchema{AccessKey: e.AccessKey})
			i = len(f.Accounts) - 1
		}
		a := &f.Accounts[i]
		if e.SecretKey != "" {
			a.SecretKey = strings.TrimSpace(e.SecretKey)
		}
		if e.WhiteRemoteAddress != nil {
			a.WhiteRemoteAddress = strings.TrimSpace(*e.WhiteRemoteAddress)
		}
		if e.Admin != nil {
			a.Admin = *e.Admin
		}
		if e.DefaultTopicPerm != "" {
			a.DefaultTopicPerm = strings.TrimSpace(e.DefaultTopicPerm)
		}
		if e.DefaultGroupPerm != "" {
			a.DefaultGroupPerm = strings.TrimSpace(e.DefaultGroupPerm)
		}
		if e.TopicPerms != nil {
			a.TopicPerms = trimAll(e.TopicPerms)
		}
		if e.GroupPerms != nil {
			a.GroupPerms = trimAll(e.GroupPerms)
		}
		return nil
	})
}

// DeleteAccount removes the account with accessKey from the file; ErrNoAccount (wrapped, naming the key)
// when it has none.
func (v *Validator) DeleteAccount(accessKey string) error {
	return v.edit(func(f *fileSchema) error {
		i := f.account(strings.TrimSpace(accessKey))
		if i < 0 {
			return fmt.Errorf("%w: [%s] is not in the ACL file", ErrNoAccount, accessKey)
		}
		f.Accounts = append(f.Accounts[:i], f.Accounts[i+1:]...)
		return nil
	})
}

// UpdateGlobalWhiteAddrs replaces the file's globalWhiteRemoteAddresses with addrs (empty entries dropped; an
// empty list clears it). A pattern that does not parse is an error quoting it.
func (v *Validator) UpdateGlobalWhiteAddrs(addrs []string) error {
	return v.edit(func(f *fileSchema) error {
		f.GlobalWhiteRemoteAddresses = trimAll(addrs)
		return nil
	})
}

// Config returns the global white addresses and the accounts of the rules in force, secret keys included
// (GET_BROKER_CLUSTER_ACL_CONFIG, which only admin accounts may ask).
func (v *Validator) Config() protocol.AclConfig {
	f := v.rules.Load().src
	out := protocol.AclConfig{GlobalWhiteAddrs: append([]string{}, f.GlobalWhiteRemoteAddresses...),
		PlainAccessConfigs: []protocol.PlainAccessConfig{}}
	for _, a := range f.Accounts {
		out.PlainAccessConfigs = append(out.PlainAccessConfigs, protocol.PlainAccessConfig{
			AccessKey: a.AccessKey, SecretKey: a.SecretKey, WhiteRemoteAddress: a.WhiteRemoteAddress, Admin: a.Admin,
			DefaultTopicPerm: a.DefaultTopicPerm, DefaultGroupPerm: a.DefaultGroupPerm,
			TopicPerms: append([]string{}, a.TopicPerms...), GroupPerms: append([]string{}, a.GroupPerms...)})
	}
	return out
}

// Version is the dataVersion of the rules in force: the file's own (counter and timestamp, as RocketMQ's tools
// write it), or counter 0 and the file's modification time for a file that has none.
func (v *Validator) Version() protocol.DataVersion {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mu.version
}

// Path is the ACL file's absolute path.
func (v *Validator) Path() string { return v.path }

// edit applies change to the file on disk and puts the result in force (see the comment at the top).
func (v *Validator) edit(change func(*fileSchema) error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	data, err := os.ReadFile(v.path)
	if err != nil {
		return fmt.Errorf("acl: read %s: %w", v.path, err)
	}
	var f fileSchema
	if err := yaml.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("acl: the ACL file %s does not parse, fix it by hand first: %w", v.path, err)
	}
	if err := change(&f); err != nil {
		return err
	}
	dv := fileVersion(f.DataVersion)
	f.DataVersion = []map[string]int64{{"counter": dv.Counter + 1, "timestamp": time.Now().UnixMilli()}}
	out, err := yaml.Marshal(&f)
	if err != nil {
		return fmt.Errorf("acl: encode %s: %w", v.path, err)
	}
	r, err := ParseRules(out)
	if err != nil {
		return err // names the entry and field, never a secret
	}
	if err := atomicfile.Write(v.path, out, 0o600); err != nil { // 0600 for a new file: it holds secrets
		return fmt.Errorf("acl: write %s: %w", v.path, err)
	}
	v.installLocked(out, r)
	v.logger.Info("acl: ACL file edited", "file", v.path, "accounts", r.Accounts(), "version", v.mu.version.Counter)
	return nil
}

// account returns the index of the account with accessKey, or -1.
func (f *fileSchema) account(accessKey string) int {
	for i, a := range f.Accounts {
		if strings.TrimSpace(a.AccessKey) == accessKey {
			return i
		}
	}
	return -1
}

// fileVersion reads RocketMQ's dataVersion entry (a list of {counter, timestamp}, or one such map); the zero
// DataVersion when the file has none.
func fileVersion(raw any) protocol.DataVersion {
	var dv protocol.DataVersion
	if list, ok := raw.([]any); ok && len(list) > 0 {
		raw = list[0]
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return dv
	}
	num := func(x any) int64 {
		switch n := x.(type) {
		case int:
			return int64(n)
		case int64:
			return n
		case uint64:
			return int64(n)
		case float64:
			return int64(n)
		}
		return 0
	}
	dv.Counter, dv.Timestamp = num(m["counter"]), num(m["timestamp"])
	return dv
}

func trimAll(in []string) []string {
	out := []string{}
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
