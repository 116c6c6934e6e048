package admin

import (
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/rocketraft/rocketraft/remoting"
)

// toolsConfig is RocketMQ's conf/tools.yml: the account the admin tool signs its requests with.
type toolsConfig struct {
	AccessKey string `yaml:"accessKey"`
	SecretKey string `yaml:"secretKey"`
}

// loadCredentials picks the account: --accessKey/--secretKey, else the tools config file (--toolsConfig,
// or RocketMQ's $ROCKETMQ_HOME/conf/tools.yml when it exists), else none. A key without its partner is a
// usage error naming the missing one; so is a --toolsConfig file that cannot be read or lacks a key. The
// default file, as in RocketMQ, leaves ACL off when it lacks a key.
func loadCredentials(com *common, getenv func(string) string) (remoting.Credentials, error) {
	if com.accessKey != "" || com.secretKey != "" {
		switch {
		case com.accessKey == "":
			return remoting.Credentials{}, usagef("--secretKey needs --accessKey")
		case com.secretKey == "":
			return remoting.Credentials{}, usagef("--accessKey needs --secretKey")
		}
		return remoting.Credentials{AccessKey: com.accessKey, SecretKey: remoting.Secret(com.secretKey)}, nil
	}
	path, explicit := com.toolsConfig, true
	if path == "" {
		explicit = false
		home := getenv("ROCKETMQ_HOME")
		if home == "" {
			return remoting.Credentials{}, nil
		}
		path = filepath.Join(home, "conf", "tools.yml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && os.IsNotExist(err) {
			return remoting.Credentials{}, nil
		}
		return remoting.Credentials{}, usagef("--toolsConfig: %v", err)
	}
	var c toolsConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return remoting.Credentials{}, usagef("tools config %s: %v", path, err)
	}
	if !explicit && (c.AccessKey == "" || c.SecretKey == "") {
		return remoting.Credentials{}, nil // as RocketMQ: an incomplete default file leaves ACL off
	}
	switch {
	case c.AccessKey == "" && c.SecretKey == "":
		return remoting.Credentials{}, usagef("tools config %s has no accessKey and secretKey", path)
	case c.AccessKey == "":
		return remoting.Credentials{}, usagef("tools config %s has no accessKey", path)
	case c.SecretKey == "":
		return remoting.Credentials{}, usagef("tools config %s has no secretKey", path)
	}
	return remoting.Credentials{AccessKey: c.AccessKey, SecretKey: remoting.Secret(c.SecretKey)}, nil
}
