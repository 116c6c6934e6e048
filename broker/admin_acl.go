package broker

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// The ACL requests (RocketMQ's AdminBrokerProcessor: updateAndCreateAccessConfig, deleteAccessConfig,
// updateGlobalWhiteAddrsConfig, getBrokerAclConfigVersion, getBrokerClusterAclConfig): they edit or read
// this broker's plain_acl.yml through its acl.Validator (acl/edit.go), which rewrites the file atomically
// and puts it in force before the answer. With aclEnable off there is no file in force and every one of them
// is refused, naming the key. Only admin accounts may send the edits (acl.AdminCode).

func (b *Broker) aclOff(code remoting.ResponseCode) *remoting.Command {
	return errResponse(code, "ACL is not enabled on broker %s (aclEnable=false): there is no ACL file to edit or read",
		b.cfg.BrokerName)
}

// processUpdateAndCreateACLConfig is UPDATE_AND_CREATE_ACL_CONFIG. Header: accessKey (required), secretKey,
// whiteRemoteAddress, admin, defaultTopicPerm, defaultGroupPerm, topicPerms and groupPerms (comma lists,
// "topicA=DENY,topicB=PUB|SUB"). A field the header leaves out keeps the account's value.
func (b *Broker) processUpdateAndCreateACLConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.aclCheck == nil {
		return b.aclOff(remoting.UpdateAndCreateACLConfigFailed)
	}
	ak, err := req.ExtString("accessKey")
	if err != nil {
		return errResponse(remoting.UpdateAndCreateACLConfigFailed, "%v", err)
	}
	e := acl.AccountEdit{AccessKey: ak, SecretKey: req.OptString("secretKey", ""),
		DefaultTopicPerm: req.OptString("defaultTopicPerm", ""), DefaultGroupPerm: req.OptString("defaultGroupPerm", "")}
	if w, ok := req.ExtFields["whiteRemoteAddress"]; ok {
		e.WhiteRemoteAddress = &w
	}
	if _, ok := req.ExtFields["admin"]; ok {
		admin, err := req.ExtBool("admin")
		if err != nil {
			return errResponse(remoting.UpdateAndCreateACLConfigFailed, "%v", err)
		}
		e.Admin = &admin
	}
	if t, ok := req.ExtFields["topicPerms"]; ok {
		e.TopicPerms = splitComma(t)
	}
	if g, ok := req.ExtFields["groupPerms"]; ok {
		e.GroupPerms = splitComma(g)
	}
	if err := b.aclCheck.UpdateAccount(e); err != nil {
		return errResponse(remoting.UpdateAndCreateACLConfigFailed, "The accessKey[%s] corresponding to accessConfig has been updated failed: %v", ak, err)
	}
	b.log.Info("acl account updated", "accessKey", ak, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "")
}

// processDeleteACLConfig is DELETE_ACL_CONFIG. Header: accessKey.
func (b *Broker) processDeleteACLConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.aclCheck == nil {
		return b.aclOff(remoting.DeleteACLConfigFailed)
	}
	ak, err := req.ExtString("accessKey")
	if err != nil {
		return errResponse(remoting.DeleteACLConfigFailed, "%v", err)
	}
	if err := b.aclCheck.DeleteAccount(ak); err != nil {
		return errResponse(remoting.DeleteACLConfigFailed, "The accessKey[%s] corresponding to accessConfig has been deleted failed: %v", ak, err)
	}
	b.log.Info("acl account deleted", "accessKey", ak, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "")
}

// processUpdateGlobalWhiteAddrsConfig is UPDATE_GLOBAL_WHITE_ADDRS_CONFIG. Header: globalWhiteAddrs (a comma
// list; empty clears) and, from RocketMQ 4.9.3, aclFileFullPath, which when given must be this broker's file.
func (b *Broker) processUpdateGlobalWhiteAddrsConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.aclCheck == nil {
		return b.aclOff(remoting.UpdateGlobalWhiteAddrsConfigFailed)
	}
	addrs, ok := req.ExtFields["globalWhiteAddrs"]
	if !ok {
		return errResponse(remoting.UpdateGlobalWhiteAddrsConfigFailed, "the request has no header field globalWhiteAddrs")
	}
	if p := req.OptString("aclFileFullPath", ""); p != "" && p != b.aclCheck.Path() {
		return errResponse(remoting.UpdateGlobalWhiteAddrsConfigFailed,
			"aclFileFullPath %s is not this broker's ACL file (%s); it has only that one", p, b.aclCheck.Path())
	}
	if err := b.aclCheck.UpdateGlobalWhiteAddrs(splitComma(addrs)); err != nil {
		return errResponse(remoting.UpdateGlobalWhiteAddrsConfigFailed, "The globalWhiteAddresses[%s] has been updated failed: %v", addrs, err)
	}
	b.log.Info("acl global white addresses updated", "addrs", addrs, "by", conn.RemoteAddr())
	return remoting.NewResponse(remoting.Success, "")
}

// processGetBrokerClusterACLInfo is GET_BROKER_CLUSTER_ACL_INFO: the answer's header carries version (the
// file's DataVersion as JSON), allAclFileVersion ({path: DataVersion} as JSON), brokerName, brokerAddr and
// clusterName.
func (b *Broker) processGetBrokerClusterACLInfo(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.aclCheck == nil {
		return b.aclOff(remoting.SystemError)
	}
	dv := b.aclCheck.Version()
	version, err := json.Marshal(dv)
	if err != nil {
		return errResponse(remoting.SystemError, "encode the ACL version: %v", err)
	}
	all, err := json.Marshal(map[string]protocol.DataVersion{b.aclCheck.Path(): dv})
	if err != nil {
		return errResponse(remoting.SystemError, "encode the ACL versions: %v", err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.SetExt("version", string(version)).SetExt("allAclFileVersion", string(all)).
		SetExt("brokerName", b.cfg.BrokerName).SetExt("brokerAddr", b.addr).
		SetExt("clusterName", b.cfg.BrokerClusterName)
	return resp
}

// processGetBrokerClusterACLConfig is GET_BROKER_CLUSTER_ACL_CONFIG: the body is protocol.AclConfig (secret
// keys included; an admin request, acl.AdminCode).
func (b *Broker) processGetBrokerClusterACLConfig(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	if b.aclCheck == nil {
		return b.aclOff(remoting.SystemError)
	}
	return remoting.NewJSONResponse(b.aclCheck.Config())
}

// splitComma splits a comma list of a header, dropping empty entries; "" is the empty (non-nil) list.
func splitComma(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
