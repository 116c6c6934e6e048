package conf

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/magiconair/properties"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// propertiesCodec lets viper read Java .properties files (RocketMQ's broker.conf / namesrv.properties
// format: `key=value` or `key: value`, # and ! comments, backslash continuations and escapes). viper
// 1.20 dropped its built-in properties codec; magiconair/properties is the parser it used before.
type propertiesCodec struct{}

func (propertiesCodec) Decode(b []byte, v map[string]any) error {
	p, err := properties.Load(b, properties.UTF8)
	if err != nil {
		return err
	}
	for _, k := range p.Keys() {
		v[k], _ = p.Get(k)
	}
	return nil
}

func (propertiesCodec) Encode(v map[string]any) ([]byte, error) {
	return nil, errors.New("conf: writing .properties files is not supported")
}

func newViper() *viper.Viper {
	reg := viper.NewCodecRegistry()
	_ = reg.RegisterCodec("properties", propertiesCodec{})
	return viper.NewWithOptions(viper.WithCodecRegistry(reg), viper.KeyDelimiter("\x00"))
}

// fileKeys maps the lower-case form of each top-level key of a config file to the key as written there:
// viper lower-cases keys, and a warning about an unknown key should name it as the user spelled it. It is
// best effort: a file it cannot read again (or a .toml file) gives an empty map, and the lower-case form
// is used.
func fileKeys(path string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	raw := map[string]any{}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		err = yaml.Unmarshal(b, &raw)
	case ".json":
		err = json.Unmarshal(b, &raw)
	case ".toml":
		return out
	default:
		err = propertiesCodec{}.Decode(b, raw)
	}
	if err != nil {
		return out
	}
	for k := range raw {
		out[strings.ToLower(k)] = k
	}
	return out
}
