// Package conf loads the configuration of the RocketRaft commands the way RocketMQ operators know it:
// a `.properties` file (RocketMQ's own format) or a YAML file, read through viper, with RocketMQ's key
// names; every key may also be given on the command line as `--key=value`, which wins over the file.
//
// Targets are plain structs whose fields carry `mapstructure:"<key>"` tags (embedded structs tagged
// `mapstructure:",squash"` contribute their keys). Each target starts from its component's
// DefaultConfig(); only keys present in the file or on the command line change it. A key that no target
// knows is a warning, not an error (RocketMQ files carry many keys this broker does not use); a value that
// does not parse as its field's type is an error that names the key.
package conf
