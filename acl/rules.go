package acl

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rocketraft/rocketraft/protocol"
)

// RetryGroupTopicPrefix starts the name of a consumer group's retry topic (%RETRY%group). A permission on such
// a topic is a permission on the group, as in RocketMQ.
const RetryGroupTopicPrefix = protocol.RetryGroupTopicPrefix

// minKeyLength: RocketMQ refuses an accessKey or secretKey of 6 characters or fewer.
const minKeyLength = 7

// fileSchema is plain_acl.yml (RocketMQ 4.x):
//
//	globalWhiteRemoteAddresses:      # requests from these addresses pass without any check
//	  - 10.10.103.*
//	accounts:
//	  - accessKey: RocketMQ          # more than 6 characters
//	    secretKey: 12345678          # more than 6 characters
//	    whiteRemoteAddress:          # requests of this account from here pass without signature or permission
//	    admin: false                 # admin request codes need true
//	    defaultTopicPerm: DENY       # for topics not in topicPerms (missing: DENY)
//	    defaultGroupPerm: SUB        # for groups not in groupPerms (missing: DENY)
//	    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
//	    groupPerms: [groupA=DENY, groupB=PUB|SUB, groupC=SUB]
//	dataVersion: [...]               # written by RocketMQ's admin tools; read and ignored
type fileSchema struct {
	GlobalWhiteRemoteAddresses []string        `yaml:"globalWhiteRemoteAddresses,omitempty"`
	Accounts                   []accountSchema `yaml:"accounts"`
	DataVersion                any             `yaml:"dataVersion,omitempty"`
}

type accountSchema struct {
	AccessKey          string   `yaml:"accessKey"`
	SecretKey          string   `yaml:"secretKey"`
	WhiteRemoteAddress string   `yaml:"whiteRemoteAddress,omitempty"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm,omitempty"`
	TopicPerms         []string `yaml:"topicPerms,omitempty"`
	GroupPerms         []string `yaml:"groupPerms,omitempty"`
}

// Rules are one loaded ACL file: immutable once built, shared by every request checked against them.
type Rules struct {
	globalWhite []*addrPattern
	accounts    map[string]*account
	// UnknownKeys lists the keys of the file this version does not know (RocketMQ ignores them too); each is
	// "line N: field X ...", never a value.
	UnknownKeys []string
	src         fileSchema // the file as read, for Config and the dataVersion
}

// account is one entry of accounts. secretKey never leaves the package.
type account struct {
	accessKey    string
	secretKey    string
	white        *addrPattern
	admin        bool
	defaultTopic Perm
	defaultGroup Perm
	topics       map[string]Perm
	groups       map[string]Perm // by group name (not its retry topic)
}

// Accounts is the number of accounts.
func (r *Rules) Accounts() int { return len(r.accounts) }

// ParseRules reads a plain_acl.yml. Every account and pattern is checked; the error names the entry (by index
// and access key) and the field, and never holds a secret key. An empty file has no accounts: only global
// white addresses then get through.
func ParseRules(data []byte) (*Rules, error) {
	var f fileSchema
	r := &Rules{accounts: map[string]*account{}}
	if len(bytes.TrimSpace(data)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			// Unknown keys are reported, not fatal (RocketMQ ignores them); anything else is.
			f = fileSchema{}
			if lerr := yaml.Unmarshal(data, &f); lerr != nil {
				return nil, fmt.Errorf("acl: %w", lerr)
			}
			r.UnknownKeys = unknownKeyLines(err)
		}
	}
	var errs []error
	for i, s := range f.GlobalWhiteRemoteAddresses {
		p, err := parseAddrPattern(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("globalWhiteRemoteAddresses[%d]: %w", i, err))
			continue
		}
		r.globalWhite = append(r.globalWhite, p)
	}
	first := map[string]int{}
	for i, s := range f.Accounts {
		a, err := buildAccount(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("accounts[%d] (accessKey %q): %w", i, s.AccessKey, err))
			continue
		}
		if j, dup := first[a.accessKey]; dup {
			errs = append(errs, fmt.Errorf("accounts[%d]: accessKey %q is already accounts[%d]", i, a.accessKey, j))
			continue
		}
		first[a.accessKey] = i
		r.accounts[a.accessKey] = a
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	r.src = f
	return r, nil
}

// unknownKeyLines keeps the "field X not found" lines of a strict decode's error.
func unknownKeyLines(err error) []string {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return []string{err.Error()}
	}
	var out []string
	for _, e := range te.Errors {
		if strings.Contains(e, "not found in type") {
			out = append(out, e)
		}
	}
	return out
}

func buildAccount(s accountSchema) (*account, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	a := &account{accessKey: strings.TrimSpace(s.AccessKey), secretKey: strings.TrimSpace(s.SecretKey), admin: s.Admin,
		topics: map[string]Perm{}, groups: map[string]Perm{}}
	if len(a.accessKey) < minKeyLength {
		bad("accessKey must be longer than %d characters", minKeyLength-1)
	}
	if len(a.secretKey) < minKeyLength {
		bad("secretKey must be longer than %d characters", minKeyLength-1) // its value is never shown
	}
	var err error
	if a.white, err = parseAddrPattern(s.WhiteRemoteAddress); err != nil {
		bad("whiteRemoteAddress: %w", err)
	}
	if a.defaultTopic, err = ParsePerm(s.DefaultTopicPerm); err != nil {
		bad("defaultTopicPerm: %w", err)
	}
	if a.defaultGroup, err = ParsePerm(s.DefaultGroupPerm); err != nil {
		bad("defaultGroupPerm: %w", err)
	}
	for i, e := range s.TopicPerms {
		name, perm, err := parseResourcePerm(e)
		switch {
		case err != nil:
			bad("topicPerms[%d]: %w", i, err)
		case strings.HasPrefix(name, RetryGroupTopicPrefix):
			a.groups[strings.TrimPrefix(name, RetryGroupTopicPrefix)] = perm // RocketMQ: a retry topic is its group
		default:
			a.topics[name] = perm
		}
	}
	for i, e := range s.GroupPerms {
		name, perm, err := parseResourcePerm(e)
		if err != nil {
			bad("groupPerms[%d]: %w", i, err)
			continue
		}
		a.groups[name] = perm
	}
	return a, errors.Join(errs...)
}

// parseResourcePerm reads "name=PERM".
func parseResourcePerm(e string) (string, Perm, error) {
	name, permText, ok := strings.Cut(e, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(permText) == "" {
		return "", 0, fmt.Errorf("%q is not name=PERM (for example topicA=SUB)", e)
	}
	perm, err := ParsePerm(permText)
	if err != nil {
		return "", 0, err
	}
	return name, perm, nil
}
