package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// ACLAccount is UPDATE_AND_CREATE_ACL_CONFIG's header: the account to create or change. A field left at its
// zero value (nil for the pointers and lists) is left out of the header, so the broker keeps the account's
// value (RocketRaft's brokers; RocketMQ's reset admin to false when it is left out). A new account needs
// SecretKey. An empty, non-nil TopicPerms or GroupPerms clears the list.
type ACLAccount struct {
	AccessKey          string
	SecretKey          string
	WhiteRemoteAddress *string
	Admin              *bool
	DefaultTopicPerm   string // DENY, PUB, SUB or PUB|SUB
	DefaultGroupPerm   string
	TopicPerms         []string // "topicA=DENY", "topicB=PUB|SUB"
	GroupPerms         []string
}

// UpdateACLAccount is UPDATE_AND_CREATE_ACL_CONFIG of a at the broker at addr: the broker rewrites its ACL
// file and puts it in force before it answers.
func (c *Client) UpdateACLAccount(ctx context.Context, addr string, a *ACLAccount) error {
	ext := map[string]string{"accessKey": a.AccessKey}
	set := func(k, v string) {
		if v != "" {
			ext[k] = v
		}
	}
	set("secretKey", a.SecretKey)
	set("defaultTopicPerm", a.DefaultTopicPerm)
	set("defaultGroupPerm", a.DefaultGroupPerm)
	if a.WhiteRemoteAddress != nil {
		ext["whiteRemoteAddress"] = *a.WhiteRemoteAddress
	}
	if a.Admin != nil {
		ext["admin"] = strconv.FormatBool(*a.Admin)
	}
	if a.TopicPerms != nil {
		ext["topicPerms"] = strings.Join(a.TopicPerms, ",")
	}
	if a.GroupPerms != nil {
		ext["groupPerms"] = strings.Join(a.GroupPerms, ",")
	}
	_, err := c.Call(ctx, addr, remoting.UpdateAndCreateACLConfig, ext, nil)
	return err
}

// DeleteACLAccount is DELETE_ACL_CONFIG of accessKey at the broker at addr.
func (c *Client) DeleteACLAccount(ctx context.Context, addr, accessKey string) error {
	_, err := c.Call(ctx, addr, remoting.DeleteACLConfig, map[string]string{"accessKey": accessKey}, nil)
	return err
}

// UpdateGlobalWhiteAddrs is UPDATE_GLOBAL_WHITE_ADDRS_CONFIG at the broker at addr: its ACL file's
// globalWhiteRemoteAddresses become addrs (none clears them). aclFile names the file ("" for the broker's
// own).
func (c *Client) UpdateGlobalWhiteAddrs(ctx context.Context, addr string, addrs []string, aclFile string) error {
	ext := map[string]string{"globalWhiteAddrs": strings.Join(addrs, ",")}
	if aclFile != "" {
		ext["aclFileFullPath"] = aclFile
	}
	_, err := c.Call(ctx, addr, remoting.UpdateGlobalWhiteAddrsConfig, ext, nil)
	return err
}

// ACLVersion is GET_BROKER_CLUSTER_ACL_INFO's answer (RocketMQ's ClusterAclVersionInfo).
type ACLVersion struct {
	ClusterName string                          `json:"clusterName"`
	BrokerName  string                          `json:"brokerName"`
	BrokerAddr  string                          `json:"brokerAddr"`
	Version     protocol.DataVersion            `json:"aclConfigDataVersion"`
	Files       map[string]protocol.DataVersion `json:"allAclConfigDataVersion"` // by ACL file path
}

// ACLVersion is GET_BROKER_CLUSTER_ACL_INFO at the broker at addr.
func (c *Client) ACLVersion(ctx context.Context, addr string) (*ACLVersion, error) {
	resp, err := c.Call(ctx, addr, remoting.GetBrokerClusterACLInfo, nil, nil)
	if err != nil {
		return nil, err
	}
	v := &ACLVersion{ClusterName: resp.ExtFields["clusterName"], BrokerName: resp.ExtFields["brokerName"],
		BrokerAddr: resp.ExtFields["brokerAddr"], Files: map[string]protocol.DataVersion{}}
	if s := resp.ExtFields["version"]; s != "" {
		if err := json.Unmarshal([]byte(s), &v.Version); err != nil {
			return nil, fmt.Errorf("%s from %s: header version: %w", remoting.GetBrokerClusterACLInfo, addr, err)
		}
	}
	// RocketMQ 5.x brokers leave allAclFileVersion out; 4.9's and ours send it.
	if s := resp.ExtFields["allAclFileVersion"]; s != "" {
		if err := json.Unmarshal([]byte(s), &v.Files); err != nil {
			return nil, fmt.Errorf("%s from %s: header allAclFileVersion: %w", remoting.GetBrokerClusterACLInfo, addr, err)
		}
	}
	return v, nil
}

// ACLConfig is GET_BROKER_CLUSTER_ACL_CONFIG at the broker at addr: its global white addresses and accounts,
// secret keys included.
func (c *Client) ACLConfig(ctx context.Context, addr string) (*protocol.AclConfig, error) {
	var out protocol.AclConfig
	if err := c.CallJSON(ctx, addr, remoting.GetBrokerClusterACLConfig, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
