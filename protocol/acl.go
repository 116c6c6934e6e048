package protocol

// PlainAccessConfig is one account of a broker's plain_acl.yml as the ACL requests carry it (RocketMQ's
// PlainAccessConfig.java): an entry of GET_BROKER_CLUSTER_ACL_CONFIG's answer. Wire format: never rename a
// tag. The secret key travels in the answer, as RocketMQ's does; the broker answers it to admin accounts
// only (package acl).
type PlainAccessConfig struct {
	AccessKey          string   `json:"accessKey"`
	SecretKey          string   `json:"secretKey"`
	WhiteRemoteAddress string   `json:"whiteRemoteAddress"`
	Admin              bool     `json:"admin"`
	DefaultTopicPerm   string   `json:"defaultTopicPerm"`
	DefaultGroupPerm   string   `json:"defaultGroupPerm"`
	TopicPerms         []string `json:"topicPerms"`
	GroupPerms         []string `json:"groupPerms"`
}

// AclConfig is GET_BROKER_CLUSTER_ACL_CONFIG's answer (RocketMQ's GetBrokerClusterAclConfigResponseBody): the
// global white addresses and the accounts of the broker's ACL file. Wire format: never rename a tag.
type AclConfig struct {
	GlobalWhiteAddrs   []string            `json:"globalWhiteAddrs"`
	PlainAccessConfigs []PlainAccessConfig `json:"plainAccessConfigs"`
}
