package admin

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/protocol"
)

// The ACL commands (RocketMQ's tools/command/acl): they edit and read the plain_acl.yml of brokers over the
// wire. -b names one broker; -c a cluster: its masters and slaves for the edits (each broker has its own
// file), its masters for the reads, as RocketMQ's. The brokers refuse the edits unless the signing account
// is admin. updateAclConfig's -a/-s name the account to edit, so it signs with --toolsConfig or tools.yml.

// aclEditResult is what an ACL edit prints: one line per broker done, then the trailer.
type aclEditResult struct {
	Brokers []string `json:"brokers"`
	line    string   // per broker, %s = address
	trailer string
}

func (r *aclEditResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	for _, a := range r.Brokers {
		t.printf(r.line+"\n", a)
	}
	t.printf("%s", r.trailer)
	return t.err
}

// aclEdit resolves -b/-c (masters and slaves) and runs fn on each broker.
func aclEdit(ctx context.Context, r *runner, target *brokerChoice, res *aclEditResult, fn func(addr string) error) (result, error) {
	refs, err := target.resolve(ctx, r, false)
	if err != nil {
		return nil, err
	}
	res.Brokers, err = eachBroker(refs, func(ref brokerRef) error { return fn(ref.addr) })
	return res, err
}

func updateAclConfigCmd() *command {
	return &command{name: "updateAclConfig", desc: "Update acl config yaml file in broker.", aclKeys: true,
		setup: func(f *flags) runFunc {
			var a client.ACLAccount
			var white, topicPerms, groupPerms string
			var admin bool
			target := chooseBrokers(f, "update acl config file to which broker", "update acl config file to which cluster")
			f.String(&a.AccessKey, "a", "accessKey", "set accessKey in acl config file", true)
			f.String(&a.SecretKey, "s", "secretKey", "set secretKey in acl config file (a new account needs one)", false)
			f.String(&white, "w", "whiteRemoteAddress", "set white ip Address for account in acl config file", false)
			f.String(&a.DefaultTopicPerm, "i", "defaultTopicPerm", "set default topicPerm in acl config file", false)
			f.String(&a.DefaultGroupPerm, "u", "defaultGroupPerm", "set default GroupPerm in acl config file", false)
			f.String(&topicPerms, "t", "topicPerms", "set topicPerms list,eg: topicA=DENY,topicD=SUB", false)
			f.String(&groupPerms, "g", "groupPerms", "set groupPerms list,eg: groupD=DENY,groupD=SUB", false)
			f.BoolArg(&admin, "m", "admin", "set admin flag in acl config file")
			return func(ctx context.Context, r *runner) (result, error) {
				if f.has("whiteRemoteAddress") {
					a.WhiteRemoteAddress = &white
				}
				if f.has("admin") {
					a.Admin = &admin
				}
				if f.has("topicPerms") {
					a.TopicPerms = splitList(topicPerms)
				}
				if f.has("groupPerms") {
					a.GroupPerms = splitList(groupPerms)
				}
				res := &aclEditResult{line: "create or update plain access config to %s success.",
					trailer: accessConfigString(&a)}
				return aclEdit(ctx, r, target, res, func(addr string) error { return r.c.UpdateACLAccount(ctx, addr, &a) })
			}
		}}
}

// accessConfigString is RocketMQ's PlainAccessConfig.toString (which leaves the secret out), for what an
// edit sent; fields it did not send print as null.
func accessConfigString(a *client.ACLAccount) string {
	quote := func(s string, set bool) string {
		if !set {
			return "null"
		}
		return "'" + s + "'"
	}
	list := func(l []string) string {
		if l == nil {
			return "null"
		}
		return "[" + strings.Join(l, ", ") + "]"
	}
	white := quote("", false)
	if a.WhiteRemoteAddress != nil {
		white = quote(*a.WhiteRemoteAddress, true)
	}
	admin := "false"
	if a.Admin != nil && *a.Admin {
		admin = "true"
	}
	return fmt.Sprintf("PlainAccessConfig{accessKey='%s', whiteRemoteAddress=%s, admin=%s, defaultTopicPerm=%s, "+
		"defaultGroupPerm=%s, topicPerms=%s, groupPerms=%s}\n", a.AccessKey, white, admin,
		quote(a.DefaultTopicPerm, a.DefaultTopicPerm != ""), quote(a.DefaultGroupPerm, a.DefaultGroupPerm != ""),
		list(a.TopicPerms), list(a.GroupPerms))
}

// splitList splits a comma list of an option, dropping empty entries ("" is the empty list).
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func deleteAclConfigCmd() *command {
	return &command{name: "deleteAclConfig", desc: "Delete Acl Config Account in broker.", aclKeys: true,
		setup: func(f *flags) runFunc {
			var ak string
			target := chooseBrokers(f, "delete acl config account from which broker", "delete acl config account from which cluster")
			f.String(&ak, "a", "accessKey", "set accessKey in acl config file for deleting which account", true)
			return func(ctx context.Context, r *runner) (result, error) {
				res := &aclEditResult{line: "delete plain access config account from %s success.",
					trailer: "account's accessKey is:" + ak + "\n"}
				return aclEdit(ctx, r, target, res, func(addr string) error { return r.c.DeleteACLAccount(ctx, addr, ak) })
			}
		}}
}

func updateGlobalWhiteAddrCmd() *command {
	return &command{name: "updateGlobalWhiteAddr", desc: "Update global white address for acl Config File in broker.",
		setup: func(f *flags) runFunc {
			var addrs, file string
			target := chooseBrokers(f, "update global white address to which broker", "update global white address to which cluster")
			f.String(&addrs, "g", "globalWhiteRemoteAddresses", "set globalWhiteRemoteAddress list,eg: 10.10.103.*,192.168.0.*", true)
			f.String(&file, "p", "aclFileFullPath", "update global white address of specified acl file,eg: /xxx/plain_test.yml", false)
			return func(ctx context.Context, r *runner) (result, error) {
				res := &aclEditResult{line: "update global white remote addresses to %s success."}
				list := splitList(addrs)
				return aclEdit(ctx, r, target, res, func(addr string) error {
					return r.c.UpdateGlobalWhiteAddrs(ctx, addr, list, file)
				})
			}
		}}
}

// aclConfigResult is getAclConfig's answer per broker.
type aclConfigResult struct {
	Brokers []brokerACL `json:"brokers"`
}

type brokerACL struct {
	Addr   string              `json:"addr"`
	Config *protocol.AclConfig `json:"config"`
}

// writeText prints as RocketMQ's GetAccessConfigSubCommand: the global white addresses, then each account's
// fields (secret keys included, as RocketMQ prints them).
func (r *aclConfigResult) writeText(w io.Writer) error {
	t := &textWriter{w: w}
	javaList := func(l []string) string { return "[" + strings.Join(l, ", ") + "]" }
	for _, b := range r.Brokers {
		t.printf("\n%-20s: %s\n\n", "globalWhiteRemoteAddresses", javaList(b.Config.GlobalWhiteAddrs))
		t.printf("accounts:\n")
		for _, a := range b.Config.PlainAccessConfigs {
			for _, kv := range [][2]string{{"accessKey", a.AccessKey}, {"secretKey", a.SecretKey},
				{"whiteRemoteAddress", a.WhiteRemoteAddress}, {"admin", fmt.Sprint(a.Admin)},
				{"defaultTopicPerm", a.DefaultTopicPerm}, {"defaultGroupPerm", a.DefaultGroupPerm},
				{"topicPerms", javaList(a.TopicPerms)}, {"groupPerms", javaList(a.GroupPerms)}} {
				t.printf("%-1s %-18s: %s\n", "", kv[0], kv[1])
			}
			t.printf("\n")
		}
	}
	return t.err
}

func getAclConfigCmd() *command {
	return &command{name: "getAclConfig", desc: "List all of acl config information in cluster.", setup: func(f *flags) runFunc {
		target := chooseBrokers(f, "query acl config version for which broker", "query acl config version for specified cluster")
		return func(ctx context.Context, r *runner) (result, error) {
			refs, err := target.resolve(ctx, r, true)
			if err != nil {
				return nil, err
			}
			res := &aclConfigResult{Brokers: []brokerACL{}}
			_, err = eachBroker(refs, func(ref brokerRef) error {
				c, err := r.c.ACLConfig(ctx, ref.addr)
				if err == nil {
					res.Brokers = append(res.Brokers, brokerACL{Addr: ref.addr, Config: c})
				}
				return err
			})
			return res, err
		}
	}}
}

// aclVersionRow is one ACL file of one broker in clusterAclConfigVersion.
type aclVersionRow struct {
	Cluster    string `json:"clusterName"`
	BrokerName string `json:"brokerName"`
	BrokerAddr string `json:"brokerAddr"`
	File       string `json:"aclFilePath"`
	Counter    int64  `json:"aclConfigVersionNum"`
	Timestamp  int64  `json:"aclLastUpdateTime"`
}

type aclVersionResult struct {
	Rows    []aclVersionRow `json:"files"`
	trailer string
}

func (r *aclVersionResult) writeText(w io.Writer) error {
	tb := newTable("#Cluster Name", "#Broker Name", "#Broker Addr", "#AclFilePath", "#AclConfigVersionNum", "#AclLastUpdateTime")
	for _, x := range r.Rows {
		tb.add(x.Cluster, x.BrokerName, x.BrokerAddr, x.File, x.Counter, dateTime(x.Timestamp))
	}
	t := &textWriter{w: w}
	t.table(tb)
	t.printf("%s", r.trailer)
	return t.err
}

func clusterAclConfigVersionCmd() *command {
	return &command{name: "clusterAclConfigVersion", desc: "List all of acl config version information in cluster.",
		setup: func(f *flags) runFunc {
			target := chooseBrokers(f, "query acl config version for which broker", "query acl config version for specified cluster")
			return func(ctx context.Context, r *runner) (result, error) {
				refs, err := target.resolve(ctx, r, true)
				if err != nil {
					return nil, err
				}
				res := &aclVersionResult{Rows: []aclVersionRow{}, trailer: "get cluster's plain access config version success.\n"}
				if target.addr != "" {
					res.trailer = fmt.Sprintf("get broker's plain access config version success. Address:%s \n", target.addr)
				}
				_, err = eachBroker(refs, func(ref brokerRef) error {
					v, err := r.c.ACLVersion(ctx, ref.addr)
					if err != nil {
						return err
					}
					if len(v.Files) == 0 { // a RocketMQ 5.x broker: the one version, no path
						v.Files = map[string]protocol.DataVersion{"": v.Version}
					}
					for _, file := range sortedKeys(v.Files) {
						dv := v.Files[file]
						res.Rows = append(res.Rows, aclVersionRow{Cluster: v.ClusterName, BrokerName: v.BrokerName,
							BrokerAddr: v.BrokerAddr, File: file, Counter: dv.Counter, Timestamp: dv.Timestamp})
					}
					return nil
				})
				if err != nil {
					res.trailer = ""
				}
				return res, err
			}
		}}
}
