package conf

import (
	"errors"

	"github.com/magiconair/properties"
	"github.com/spf13/viper"
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
